package jobs

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// WhoAmI asks the API server who c's credentials are (a SelfSubjectReview, which every
// authenticated user may create): the name it checks tfv1.AnnotationCreator against.
func WhoAmI(ctx context.Context, c client.Client) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", fmt.Errorf("asking the API server who the user is: %w", err)
	}
	return review.Status.UserInfo.Username, nil
}

// SetCreator records user as the job's creator, replacing any creator a manifest or a
// run record brought: a record read back from S3 must not name someone else as the
// job's creator. An empty user removes the annotation.
func SetCreator(job *tfv1.TFJob, user string) {
	if user == "" {
		delete(job.Annotations, tfv1.AnnotationCreator)
		return
	}
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations[tfv1.AnnotationCreator] = user
}

// StampCreator sets the job's creator to the user c acts as. When the API server does
// not say (an admin may withhold SelfSubjectReview), the job goes without one: only the
// accounts the notebooks' policy restricts need it, and it names the annotation then.
func StampCreator(ctx context.Context, c client.Client, job *tfv1.TFJob) {
	user, err := WhoAmI(ctx, c)
	if err != nil {
		user = ""
	}
	SetCreator(job, user)
}
