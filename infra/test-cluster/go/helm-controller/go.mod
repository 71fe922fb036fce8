// Wrapper module: the CRDs of github.com/fluxcd/helm-controller (see ../../README.md); nothing is built, nothing
// imports it, so `go mod tidy` would drop the require: change the version by hand (and go.sum with `go mod download`).
module berth.local/test-cluster/helm-controller

go 1.26.0

require github.com/fluxcd/helm-controller v1.6.3
