package notebook

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/storage/s3keys"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// Keys makes and removes S3 keys confined to a prefix of the bucket: an s3keys.Admin
// holding the bucket's root keys.
type Keys interface {
	Create(ctx context.Context, prefix string) (s3keys.Key, error)
	Delete(ctx context.Context, accessKeyID string) error
}

// AdminKeys is the Keys that cfg, the bucket's own keys, makes and removes; nil when
// cfg has no S3 endpoint to reach, for Stop to keep what it could not clean up.
func AdminKeys(cfg storage.Config, err error) Keys {
	if err != nil {
		return nil
	}
	admin, err := s3keys.New(cfg)
	if err != nil {
		return nil
	}
	return admin
}

// StoragePrefix is the part of the bucket a notebook's key reaches:
// notebooks/<namespace>/<name>/. Namespace and name make it one notebook's in the
// cluster, and it outlives a stop, as the home claim does, so that a notebook started
// again under its name finds its code, data and runs where it left them.
func StoragePrefix(namespace, name string) string {
	return "notebooks/" + namespace + "/" + name + "/"
}

// Start gives the notebook a key of its own (ScopeKeys) through keys, unless keys is
// nil, and creates its objects (Create). shared reports a server that makes no
// accounts: the notebook then holds the bucket's keys s.S3 has. A key made for a start
// that failed before the notebook's Secret held it is deleted again, since nothing
// else records its account.
func Start(ctx context.Context, c client.Client, keys Keys, s Spec) (shared bool, err error) {
	made := false
	if keys != nil {
		made, err = ScopeKeys(ctx, c, keys, &s)
		if shared = errors.Is(err, s3keys.ErrNoAccounts); err != nil && !shared {
			return false, err
		}
	}
	err = Create(ctx, c, s)
	if err != nil && made {
		if id, _, ok, herr := heldKey(ctx, c, s.namespace, s.name); herr != nil || !ok || id != s.S3.AccessKeyID {
			err = errors.Join(err, deleteKey(ctx, keys, s.name, s.S3.AccessKeyID))
		}
	}
	return shared, err
}

// ScopeKeys gives the notebook a key of its own, confined to its StoragePrefix, in
// place of the bucket's keys s.S3 holds, and sets that prefix: the key its S3 Secret
// holds from an earlier start, else a new one (made). Reusing it keeps the jobs still
// running from that start, whose pods read the Secret, working. On a server that
// makes no accounts it returns an error wrapping s3keys.ErrNoAccounts and leaves s as
// it was.
func ScopeKeys(ctx context.Context, c client.Client, keys Keys, s *Spec) (made bool, err error) {
	prefix := StoragePrefix(s.namespace, s.name)
	if id, secret, ok, err := heldKey(ctx, c, s.namespace, s.name); err != nil {
		return false, err
	} else if ok {
		s.S3.AccessKeyID, s.S3.SecretAccessKey, s.S3.Prefix = id, secret, prefix
		return false, nil
	}
	k, err := keys.Create(ctx, prefix)
	if err != nil {
		return false, fmt.Errorf("making the S3 key of notebook %s: %w", s.name, err)
	}
	s.S3.AccessKeyID, s.S3.SecretAccessKey, s.S3.Prefix = k.AccessKeyID, k.SecretAccessKey, prefix
	return true, nil
}

// heldKey reads the notebook's S3 Secret and returns the key it holds, if it is one
// ScopeKeys made: the Secret names the notebook's prefix. A Secret without a prefix
// holds the bucket's own keys, which are never the notebook's to delete.
func heldKey(ctx context.Context, c client.Client, namespace, name string) (id, secret string, ok bool, err error) {
	sec := &corev1.Secret{}
	err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: S3Secret(name)}, sec)
	if apierrors.IsNotFound(err) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("reading the S3 Secret of notebook %s: %w", name, err)
	}
	id, secret = string(sec.Data[tfjob.EnvAccessKeyID]), string(sec.Data[tfjob.EnvSecretAccessKey])
	ok = sec.Labels[tfv1.LabelNotebook] == name && string(sec.Data[tfjob.EnvS3Prefix]) == StoragePrefix(namespace, name) &&
		id != "" && secret != ""
	return id, secret, ok, nil
}

// deleteKey removes the account of the key the notebook's S3 Secret holds, if
// ScopeKeys made it; Stop calls it once the Secret is deleted, so that a failure leaves
// an account named in the error rather than a Secret whose key is gone.
func deleteKey(ctx context.Context, keys Keys, name, accessKeyID string) error {
	if accessKeyID == "" {
		return nil
	}
	if err := keys.Delete(ctx, accessKeyID); err != nil {
		return fmt.Errorf("deleting the S3 account %s of notebook %s: %w", accessKeyID, name, err)
	}
	return nil
}
