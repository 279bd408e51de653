package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// EnvErrors, set to "json", makes a failing command print its error to stderr as one
// JSON line, jsonError, which the Python SDK reads to raise the matching exception.
const EnvErrors = "TFK8S_ERRORS"

// ErrorType is the kind of a failure, as a program reads it: the "type" of the JSON
// error line, and the Python SDK's exception.
type ErrorType string

// The kinds of failure.
const (
	// ErrInvalidJob: the job's parameters, manifest or DIR are refused, before S3 or
	// the cluster is touched (or by the API server's validation).
	ErrInvalidJob ErrorType = "InvalidJob"
	ErrNotFound   ErrorType = "NotFound"
	ErrExists     ErrorType = "AlreadyExists"
	// ErrClusterUnavailable: no kubeconfig, or the API server cannot be reached.
	ErrClusterUnavailable ErrorType = "ClusterUnavailable"
	// ErrStorageNotConfigured: an S3 setting the command needs is set nowhere.
	ErrStorageNotConfigured ErrorType = "StorageNotConfigured"
	// ErrAccessDenied: the API server or S3 refused the credentials or the permission.
	ErrAccessDenied ErrorType = "AccessDenied"
	ErrTimeout      ErrorType = "Timeout"
	// ErrNotSubmitted: submit --from-run showed the run's job on stdout and created
	// nothing, because the record could not be checked against the cluster and --yes
	// was not given.
	ErrNotSubmitted ErrorType = "NotSubmitted"
	ErrOther        ErrorType = "Error"
)

// jsonError is the line a failing command prints with TFK8S_ERRORS=json:
// {"error":{"type":"InvalidJob","message":"--workers -1: must not be negative","field":"--workers"}}.
type jsonError struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Type    ErrorType `json:"type"`
	Message string    `json:"message"`
	// Field is the refused parameter as the user spelled it (--workers, -f, DIR) or a
	// manifest's field path; only for InvalidJob.
	Field string `json:"field,omitempty"`
}

// invalidJobError is a refusal of the job's parameters, manifest or DIR, naming the
// field refused; submit and render return it for everything they refuse before
// touching S3 or the cluster.
type invalidJobError struct {
	field string
	err   error
}

func (e *invalidJobError) Error() string { return e.err.Error() }
func (e *invalidJobError) Unwrap() error { return e.err }

// invalidJob wraps err, if any, as a refusal of the job. The field is the flag the
// message starts with, as jobspec's messages all do, else fallback.
func invalidJob(err error, fallback string) error {
	if err == nil {
		return nil
	}
	var already *invalidJobError
	if errors.As(err, &already) {
		return err
	}
	field := leadingField(err.Error())
	if field == "" {
		field = fallback
	}
	return &invalidJobError{field: field, err: err}
}

// leadingField is the parameter a refusal's message names first: a flag (--workers
// -1: ...), a manifest's field (field spec.tfReplicaSpecs.PS: ...), or the command.
func leadingField(msg string) string {
	word := func(s string) string {
		end := strings.IndexAny(s, " :=")
		if end < 0 {
			return s
		}
		return s[:end]
	}
	switch {
	case strings.HasPrefix(msg, "--"):
		return word(msg)
	case strings.HasPrefix(msg, "field ") && strings.Contains(word(msg[len("field "):]), "."):
		return word(msg[len("field "):])
	case strings.HasPrefix(msg, "a command is required"):
		return "command"
	case strings.HasPrefix(msg, "the job has no chief and no worker"):
		return "--workers"
	}
	return ""
}

// flagError makes a flag's unreadable value (--workers abc) a refusal naming the
// flag; cobra calls it for submit's and render's flags.
func flagError(err error) error {
	var invalid *pflag.InvalidValueError
	if errors.As(err, &invalid) {
		return &invalidJobError{field: "--" + invalid.GetFlag().Name, err: err}
	}
	return err
}

// notSubmittedError says that submit --from-run showed the run's job rather than
// submitting it; exiting 0 would tell a script or the SDK that the job exists.
type notSubmittedError struct {
	fromRun, reason string
}

func (e *notSubmittedError) Error() string {
	return fmt.Sprintf("--from-run %s: %s; the job is shown, not submitted. Check it, then submit it with --yes", e.fromRun, e.reason)
}

// noClusterError says that no kubeconfig names a cluster, so that a command does not
// dial localhost:8080, client-go's last resort.
type noClusterError struct {
	kubeconfig string
}

func (e *noClusterError) Error() string {
	return fmt.Sprintf("no cluster: no kubeconfig at %s (set KUBECONFIG, --kubeconfig or run tfk8s local up)", e.kubeconfig)
}

// classifyError says what kind of failure err is. apiServer is the API server's
// host:port ("" if unknown): an unreachable address is the cluster's only if it is
// that one, not S3's.
func classifyError(err error, apiServer string) errorDetail {
	d := errorDetail{Type: ErrOther, Message: err.Error()}
	var invalid *invalidJobError
	var notFound *jobs.NotFoundError
	var noCluster *noClusterError
	var notConfigured *storage.NotConfiguredError
	var notSubmitted *notSubmittedError
	var status apierrors.APIStatus
	switch {
	case errors.As(err, &invalid):
		d.Type, d.Field = ErrInvalidJob, invalid.field
	case errors.As(err, &notSubmitted):
		d.Type = ErrNotSubmitted
	case errors.As(err, &noCluster):
		d.Type = ErrClusterUnavailable
	case errors.As(err, &notConfigured):
		d.Type = ErrStorageNotConfigured
	case errors.As(err, &notFound), errors.Is(err, storage.ErrNotFound):
		d.Type = ErrNotFound
	case storage.Denied(err):
		d.Type = ErrAccessDenied
	case errors.As(err, &status):
		d.Type, d.Field = classifyStatus(err)
	case errors.Is(err, context.DeadlineExceeded):
		d.Type = ErrTimeout
	case unreachableServer(err, apiServer):
		d.Type = ErrClusterUnavailable
	}
	return d
}

// classifyStatus classifies an answer of the API server; the field is that of the
// first cause of an Invalid answer.
func classifyStatus(err error) (ErrorType, string) {
	switch {
	case apierrors.IsNotFound(err):
		return ErrNotFound, ""
	case apierrors.IsAlreadyExists(err):
		return ErrExists, ""
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return ErrAccessDenied, ""
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return ErrTimeout, ""
	case apierrors.IsInvalid(err):
		var status apierrors.APIStatus
		errors.As(err, &status)
		field := ""
		if details := status.Status().Details; details != nil && len(details.Causes) > 0 {
			field = details.Causes[0].Field
		}
		return ErrInvalidJob, field
	}
	return ErrOther, ""
}

// unreachableServer reports whether err is a failure to reach the API server at
// apiServer at all: a refused or timed-out connection, a host not found.
func unreachableServer(err error, apiServer string) bool {
	var urlErr *url.Error
	if apiServer == "" || !errors.As(err, &urlErr) {
		return false
	}
	u, perr := url.Parse(urlErr.URL)
	if perr != nil || u.Host != apiServer {
		return false
	}
	var netErr net.Error
	var dnsErr *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dnsErr) ||
		(errors.As(err, &netErr) && netErr.Timeout()) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH)
}

// printError prints err as the JSON line of TFK8S_ERRORS=json.
func printError(w io.Writer, err error, apiServer string) {
	line, _ := json.Marshal(jsonError{Error: classifyError(err, apiServer)})
	fmt.Fprintf(w, "%s\n", line)
}
