package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"

	"github.com/tfk8s/tfk8s/internal/tfjob"
	"github.com/tfk8s/tfk8s/internal/version"
)

// controllerContainer is the container of tfjob.ControllerDeployment that runs
// tfk8s-controller.
const controllerContainer = "controller"

// serverVersionTimeout bounds the one request for the controller's Deployment, so that
// an unreachable cluster costs seconds, not a TCP timeout.
const serverVersionTimeout = 10 * time.Second

// versionInfo is what tfk8s version prints; -o json prints it as is.
type versionInfo struct {
	Client clientVersion `json:"client"`
	// Server is the controller's version; nil when it could not be read.
	Server *serverVersion `json:"server,omitempty"`
	// ServerError says why the server's version is unknown.
	ServerError string `json:"serverError,omitempty"`
	// Warning is set when client and server are more than one minor version apart.
	Warning string `json:"warning,omitempty"`
}

type clientVersion struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
}

// serverVersion is the controller's version: its image's tag.
type serverVersion struct {
	Version string `json:"version"`
	Image   string `json:"image"`
	// Deployment is where it was read: namespace/name.
	Deployment string `json:"deployment"`
}

// newVersionCommand returns `tfk8s version`.
func newVersionCommand(o *rootOptions) *cobra.Command {
	var output, namespace string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of tfk8s and of the controller in the cluster",
		Long: `Prints the version of this tfk8s binary and its git revision, and the version of
the tfk8s controller in the cluster: the tag of the image its Deployment
(tfk8s-system/tfk8s-controller, as the Helm chart and config/default install it)
runs. Reading it takes get on deployments.apps in that namespace. Without a
reachable cluster, or without that permission, the server's version is unknown
and the command still succeeds. A CLI and a controller more than one minor version
apart get a warning on stderr.`,
		Example: `  tfk8s version
  tfk8s version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, outputTable, outputJSON); err != nil {
				return err
			}
			info := versionInfo{Client: clientVersion{Version: version.Version, Revision: version.Revision}}
			server, err := o.serverVersion(cmd.Context(), namespace)
			if err != nil {
				info.ServerError = err.Error()
			} else {
				info.Server = server
				info.Warning = versionSkew(info.Client.Version, server.Version)
			}
			if info.Warning != "" {
				fmt.Fprintln(o.env.ErrOut, "Warning:", info.Warning)
			}
			return printVersion(o.env.Out, info, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json")
	cmd.Flags().StringVar(&namespace, "controller-namespace", tfjob.InstallNamespace, "namespace of the controller's Deployment")
	return cmd
}

// serverVersion reads the controller's version from its Deployment.
func (o *rootOptions) serverVersion(ctx context.Context, namespace string) (*serverVersion, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	return readServerVersion(ctx, kube, namespace)
}

// readServerVersion reads the image of the controller's Deployment and its tag.
func readServerVersion(ctx context.Context, kube kubernetes.Interface, namespace string) (*serverVersion, error) {
	ctx, cancel := context.WithTimeout(ctx, serverVersionTimeout)
	defer cancel()
	d, err := kube.AppsV1().Deployments(namespace).Get(ctx, tfjob.ControllerDeployment, metav1.GetOptions{})
	where := namespace + "/" + tfjob.ControllerDeployment
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("no deployment %s: tfk8s is not installed there", where)
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("reading deployment %s is forbidden: it takes get on deployments.apps in %s", where, namespace)
	case err != nil:
		return nil, fmt.Errorf("reading deployment %s: %w", where, err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != controllerContainer {
			continue
		}
		tag := imageTag(c.Image)
		if tag == "" {
			return nil, fmt.Errorf("deployment %s runs %s, which names no tag", where, c.Image)
		}
		return &serverVersion{Version: tag, Image: c.Image, Deployment: where}, nil
	}
	return nil, fmt.Errorf("deployment %s has no container %q", where, controllerContainer)
}

// imageTag is the tag of an image reference (host:port/path/name:tag[@digest]); ""
// when it has none.
func imageTag(image string) string {
	image, _, _ = strings.Cut(image, "@")
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, _ := strings.Cut(name, ":")
	return tag
}

// versionSkew says why client and server versions are too far apart: a different
// major version, or minor versions more than one apart. "" when they are not, or when
// either is not a semantic version.
func versionSkew(client, server string) string {
	c, errC := utilversion.ParseSemantic(client)
	s, errS := utilversion.ParseSemantic(server)
	if errC != nil || errS != nil {
		return ""
	}
	minors := int(c.Minor()) - int(s.Minor())
	if c.Major() == s.Major() && minors >= -1 && minors <= 1 {
		return ""
	}
	return fmt.Sprintf("tfk8s %s and the controller %s are more than one minor version apart: use the tfk8s of the controller's release", client, server)
}

// printVersion prints info as a table of two lines or as JSON.
func printVersion(w io.Writer, info versionInfo, output string) error {
	if output == outputJSON {
		out, err := json.MarshalIndent(info, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", out)
		return err
	}
	client := info.Client.Version
	if info.Client.Revision != "" {
		client += " (revision " + info.Client.Revision + ")"
	}
	server := "unknown: " + info.ServerError
	if info.Server != nil {
		server = fmt.Sprintf("%s (deployment %s, image %s)", info.Server.Version, info.Server.Deployment, info.Server.Image)
	}
	_, err := fmt.Fprintf(w, "Client: %s\nServer: %s\n", client, server)
	return err
}
