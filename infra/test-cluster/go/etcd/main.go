// etcd's own entry point (go.etcd.io/etcd/v3's main.go), which is not importable: its module replaces
// every etcd module with a local folder, so it cannot be built from the module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
