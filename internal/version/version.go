// Package version is the one place tfk8s's version is written. The Makefile reads
// Version from this file and stamps it, with Revision and Repository, into every binary
// and image it builds (-ldflags -X), so that the controller's default agent image is
// the agent image of the same build.
package version

// Version is the release of tfk8s these sources are; the chart's appVersion and the
// images' tags. The Makefile's VERSION=... overrides it for a build.
var Version = "v0.1.0"

// Revision is the git commit the binary was built from; empty when built without the
// Makefile.
var Revision = ""

// Repository is where the images of this build are published:
// <Repository>/tfk8s-controller and <Repository>/tfk8s-agent.
var Repository = "ghcr.io/tfk8s"

// Image names the image of one tfk8s binary, e.g. Image("tfk8s-agent"), for this
// version.
func Image(name string) string {
	return Repository + "/" + name + ":" + Version
}
