//go:build tools

// Pins the program this module builds, so `go mod tidy` keeps its dependencies.
package tools

import _ "gitea.dev"
