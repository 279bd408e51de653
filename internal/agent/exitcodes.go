package agent

// Exit codes of `tfk8s-agent run` when the command could not start. Once the command
// has started, the agent exits with the command's own code, or 128+N when a signal N
// killed it. The codes of failures that retrying cannot cure are below 128, so that the
// ExitCode restart policy fails the replica; storage being unreachable is 128 and above,
// so that the pod is re-created.
const (
	// ExitUsage: bad flags or environment (EX_USAGE).
	ExitUsage = 64
	// ExitDigestMismatch: the code archive's SHA-256 is not the expected one (EX_DATAERR).
	ExitDigestMismatch = 65
	// ExitNotFound: the code archive, a data source or the bucket does not exist
	// (EX_NOINPUT).
	ExitNotFound = 66
	// ExitBadArchive: the code archive could not be unpacked (not a tar.gz, an entry
	// leading outside the code path, or more bytes or entries than the caps allow).
	ExitBadArchive = 67
	// ExitStorageDenied: the storage refused the credentials or the permission
	// (EX_NOPERM). Only other credentials cure it, so retrying is pointless.
	ExitStorageDenied = 77
	// ExitInternal: a local failure, e.g. the log or code directory cannot be written
	// (EX_SOFTWARE).
	ExitInternal = 70
	// ExitCannotExecute: the command exists but cannot be run, as in a shell.
	ExitCannotExecute = 126
	// ExitCommandNotFound: the command does not exist, as in a shell.
	ExitCommandNotFound = 127
	// ExitStorageUnavailable: S3 did not answer before the command could start
	// (128 + EX_TEMPFAIL).
	ExitStorageUnavailable = 128 + 75
)

// Reasons of an attempt's end, in its record (storage.Attempt.Reason).
const (
	ReasonCompleted          = "Completed"
	ReasonError              = "Error"
	ReasonSignaled           = "Signaled"
	ReasonInvalidConfig      = "InvalidConfig"
	ReasonDigestMismatch     = "DigestMismatch"
	ReasonNotFound           = "NotFound"
	ReasonBadArchive         = "BadArchive"
	ReasonStorageDenied      = "StorageDenied"
	ReasonStorageUnavailable = "StorageUnavailable"
	ReasonAgentError         = "AgentError"
	ReasonCannotExecute      = "CannotExecute"
	ReasonCommandNotFound    = "CommandNotFound"
)

// failureReasons name the agent's exit codes for failures before the command ran.
var failureReasons = map[int]string{
	ExitUsage:              ReasonInvalidConfig,
	ExitDigestMismatch:     ReasonDigestMismatch,
	ExitNotFound:           ReasonNotFound,
	ExitBadArchive:         ReasonBadArchive,
	ExitStorageDenied:      ReasonStorageDenied,
	ExitInternal:           ReasonAgentError,
	ExitCannotExecute:      ReasonCannotExecute,
	ExitCommandNotFound:    ReasonCommandNotFound,
	ExitStorageUnavailable: ReasonStorageUnavailable,
}
