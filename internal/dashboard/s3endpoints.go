package dashboard

import (
	"fmt"
	"net"
	"slices"
	"strings"
)

// S3EndpointsFlag names the setting that lists the S3 endpoints the dashboard may
// reach, as a refusal tells the user; S3EndpointsValue is the chart's value of it.
const (
	S3EndpointsFlag  = "--allowed-s3-endpoint"
	S3EndpointsValue = "dashboard.allowedS3Endpoints"
)

// S3Endpoints are the S3 endpoints the dashboard may reach for a job's logs and
// artifacts. In the cluster, a job's storage Secret names the endpoint, and whoever
// may write a Secret in some namespace would otherwise have the dashboard dial any
// address from inside tfk8s-system: the admin names the endpoints, and the rest are
// refused before a connection is made.
type S3Endpoints struct {
	// any allows every endpoint: the local dashboard, which dials from the user's
	// own machine as tfk8s logs does.
	any   bool
	hosts []string // host:port, lower case
}

// AnyS3Endpoint allows every endpoint.
func AnyS3Endpoint() *S3Endpoints { return &S3Endpoints{any: true} }

// AllowS3Endpoints allows the endpoints given, each host:port or http(s)://host:port;
// none for an empty list.
func AllowS3Endpoints(endpoints []string) (*S3Endpoints, error) {
	a := &S3Endpoints{}
	for _, e := range endpoints {
		hostPort := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(e, "http://"), "https://"), "/")
		if _, port, err := net.SplitHostPort(hostPort); err != nil || port == "" || strings.Contains(hostPort, "/") {
			return nil, fmt.Errorf("%s %q: want host:port or http(s)://host:port", S3EndpointsFlag, e)
		}
		a.hosts = append(a.hosts, strings.ToLower(hostPort))
	}
	return a, nil
}

// Check refuses an endpoint, host:port as a job's storage Secret names it, that is not
// allowed, naming the setting that would allow it.
func (a *S3Endpoints) Check(endpoint string) error {
	if a.any || slices.Contains(a.hosts, strings.ToLower(endpoint)) {
		return nil
	}
	allowed := "none"
	if len(a.hosts) > 0 {
		allowed = strings.Join(a.hosts, ", ")
	}
	return fmt.Errorf("%w: S3 endpoint %s refused: the dashboard reaches only the S3 endpoints its admin allows (%s, chart value %s), now %s",
		ErrForbidden, endpoint, S3EndpointsFlag, S3EndpointsValue, allowed)
}
