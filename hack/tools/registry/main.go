// Command registry is the CNCF Distribution registry with only what tfk8s uses linked
// in: filesystem storage and htpasswd authentication. Its upstream command also links
// the Azure, GCS and S3 drivers, pull-through proxying and token auth: 1,000 packages
// to compile instead of about 570.
package main

import (
	"os"

	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

func main() {
	if err := registry.RootCmd.Execute(); err != nil {
		os.Exit(1)
	}
}
