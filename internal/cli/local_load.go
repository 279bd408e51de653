//go:build linux && !sdk

package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tfk8s/tfk8s/internal/localcluster"
)

// newLoadCommand returns `tfk8s local load`.
func newLoadCommand(opts *localcluster.Options, streams genericiooptions.IOStreams) *cobra.Command {
	var ref string
	cmd := &cobra.Command{
		Use:   "load IMAGE...",
		Short: "Push images (OCI layouts, OCI archives, docker save tarballs) into the local cluster's registry",
		Long: `Pushes each IMAGE into the running local cluster's registry, under its reference's
repository path (ghcr.io/me/model:1 goes to 127.0.0.1:5000/me/model:1, busybox:1.36 to
127.0.0.1:5000/library/busybox:1.36), where the node looks first for every image: pods
then run it by its usual reference. IMAGE is an OCI image layout directory, an OCI
archive (a tar of one) or a docker save tarball, gzipped or not. The reference comes
from the layout's org.opencontainers.image.ref.name annotation (a bare tag means
ghcr.io/tfk8s/<directory name>:<tag>) or the tarball's tag, or from --name. Prints
each image's reference, local reference and digest. Blobs the registry has are not
sent again.`,
		Example: `  docker save busybox:1.36 -o busybox.tar && tfk8s local load busybox.tar
  tfk8s local load _out/images/tensorflow
  tfk8s local load model.tar --name ghcr.io/me/model:1`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return localcluster.Load(cmd.Context(), *opts, args, ref, streams.Out)
		},
	}
	cmd.Flags().StringVar(&ref, "name", "", "reference to push the one IMAGE under, instead of the one it carries")
	return cmd
}
