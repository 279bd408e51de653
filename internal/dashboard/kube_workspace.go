package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/notebook"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// Artifacts lists a job's stored files as tfk8s artifacts ls does. S3 is reached as
// jobStorage reaches it: the job is read with the user's credentials first, and
// in-cluster the S3 settings come from the job's storage Secret, read with them too,
// so that a user who may not read either gets the API server's refusal and nothing
// of S3.
func (d *kubeCluster) Artifacts(ctx context.Context, namespace, name string) ([]ArtifactRow, error) {
	_, base, c, err := d.storage.JobFiles(ctx, d.in(namespace), name)
	if err != nil {
		return nil, err
	}
	objs, err := c.List(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("listing the files of tfjob %s: %w", name, err)
	}
	rows := make([]ArtifactRow, 0, len(objs))
	for _, obj := range objs {
		rel := strings.TrimPrefix(obj.URI.Key, base.Key)
		replica, _, _ := strings.Cut(rel, "/")
		rows = append(rows, ArtifactRow{Replica: replica, Path: rel, Size: obj.Size, Modified: obj.ModTime})
	}
	return rows, nil
}

// Artifact writes one stored file of a job, found as Artifacts finds them; the path
// must name a file under the job's prefix.
func (d *kubeCluster) Artifact(ctx context.Context, namespace, name, file string, w io.Writer) error {
	if file == "" || path.IsAbs(file) || path.Clean(file) != file || strings.HasPrefix(file, "../") || file == ".." {
		return fmt.Errorf("path %q: want a file's path under the job's files, such as worker-0/artifacts/model.keras: %w", file, ErrBadRequest)
	}
	_, base, c, err := d.storage.JobFiles(ctx, d.in(namespace), name)
	if err != nil {
		return err
	}
	if _, err := c.Download(ctx, base.Join(file), w); err != nil {
		return fmt.Errorf("downloading %s of tfjob %s: %w", file, name, err)
	}
	return nil
}

// Workspace lists the notebooks of a namespace as tfk8s notebook list does, and the
// TensorBoards of its jobs, a deleted one too (tfk8s tensorboard brings it back). A
// user who may not list notebooks still sees the TensorBoards, and why the
// notebooks are missing.
func (d *kubeCluster) Workspace(ctx context.Context, namespace string) (*Workspace, error) {
	list := &tfv1.TFJobList{}
	if err := d.client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing tfjobs: %w", err)
	}
	ws := &Workspace{NoNotebookS3: d.noS3}
	for i := range list.Items {
		job := &list.Items[i]
		tb := job.Status.TensorBoard
		if tb == nil && !jobs.TensorBoardEnabled(job) {
			continue
		}
		row := TensorBoardRow{Job: job.Name, JobState: string(job.Status.State), Deleted: tb == nil}
		if tb != nil {
			row.URL, row.Ready = tb.URL, tb.Ready
			if tb.ExpiresAt != nil {
				row.Expires = tb.ExpiresAt.Time
			}
		}
		ws.TensorBoards = append(ws.TensorBoards, row)
	}
	slices.SortFunc(ws.TensorBoards, func(a, b TensorBoardRow) int { return strings.Compare(a.Job, b.Job) })
	states, err := notebook.List(ctx, d.client, namespace)
	if err != nil {
		ws.NotebooksError = err.Error()
	}
	for _, st := range states {
		row := NotebookRow{Name: st.Name, State: st.State, Created: st.Created.Time}
		if st.Running {
			row.URL = fmt.Sprintf("http://%s.%s.svc:%d/lab", st.Name, namespace, tfjob.NotebookPort)
		}
		ws.Notebooks = append(ws.Notebooks, row)
	}
	return ws, nil
}

// StartNotebook starts a notebook as tfk8s notebook start does: its flags checked
// and its objects built by the same code, a running notebook left as it is. Locally
// the notebook gets the user's S3 settings, as from the command; in-cluster none,
// since the dashboard's own would hand its credentials to the user.
func (d *kubeCluster) StartNotebook(ctx context.Context, req NotebookRequest) error {
	s, err := notebook.Defaults(req.Image, req.CPU, req.Memory).Spec(req.Namespace, req.Name)
	if err != nil {
		return err
	}
	st, err := notebook.Status(ctx, d.client, req.Namespace, req.Name)
	switch {
	case err != nil && !errors.Is(err, notebook.ErrNoNotebook):
		return err
	case st.Running:
		return nil
	}
	var keys notebook.Keys
	if !d.noS3 {
		cfg, err := d.storage.Local()
		if err == nil {
			err = jobs.RequireBucket(cfg)
		}
		if err != nil {
			return err
		}
		s.S3 = cfg
		// As from the command: a key confined to the notebook's prefix where the
		// server makes accounts, the user's own keys where it does not.
		keys = notebook.AdminKeys(cfg, nil)
	}
	if s.Token, err = notebook.NewToken(); err != nil {
		return err
	}
	_, err = notebook.Start(ctx, d.client, keys, s)
	return err
}

// StopNotebook stops a notebook as tfk8s notebook stop does. Locally the user's S3
// settings delete its key's account; in-cluster there are none, and Stop keeps a
// Secret whose account it cannot delete.
func (d *kubeCluster) StopNotebook(ctx context.Context, namespace, name string, deleteHome bool) error {
	var keys notebook.Keys
	if !d.noS3 {
		keys = notebook.AdminKeys(d.storage.Local())
	}
	deleted, _, err := notebook.Stop(ctx, d.client, namespace, name, deleteHome, keys)
	if err != nil {
		return err
	}
	if deleted == 0 {
		return fmt.Errorf("notebook %s/%s: %w: %w", namespace, name, notebook.ErrNoNotebook, ErrNotFound)
	}
	return nil
}

// RequestTensorBoard annotates the job as tfk8s tensorboard JOB does, so that the
// controller keeps its TensorBoard, or creates it again, for its time to live from
// now.
func (d *kubeCluster) RequestTensorBoard(ctx context.Context, namespace, name string) error {
	job, err := jobs.Get(ctx, d.client, namespace, name)
	if err != nil {
		return err
	}
	if err := jobs.RefuseKubeflowExtras(job, "TensorBoard"); err != nil {
		return err
	}
	if !jobs.TensorBoardEnabled(job) {
		return fmt.Errorf("job %s/%s has no TensorBoard (spec.tensorboard.enabled is false): submit it with --tensorboard: %w",
			namespace, name, ErrBadRequest)
	}
	return jobs.RequestTensorBoard(ctx, d.client, job, time.Now())
}
