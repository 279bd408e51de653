// Command etcd is the upstream etcd server, built from the Go module proxy so
// that tfk8s needs no prebuilt binaries.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
