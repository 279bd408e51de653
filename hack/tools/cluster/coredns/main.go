// Command coredns is CoreDNS with only the plugins the Corefile of tfk8s local mode
// uses (internal/localcluster): bind, errors, ready, kubernetes, forward, cache and
// loop. Importing core/plugin instead would compile every plugin, the cloud backends
// (Route 53, Azure, Google) among them.
package main

import (
	// The server type, then the plugins, in no particular order: the order in which
	// plugins run is CoreDNS's own directive list, not the import order.
	_ "github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"

	"github.com/coredns/coredns/coremain"
)

func main() {
	coremain.Run()
}
