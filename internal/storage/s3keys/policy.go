package s3keys

import (
	"encoding/json"
	"fmt"
	"strings"
)

// policyVersion is the policy language version every S3 server reads.
const policyVersion = "2012-10-17"

// objectActions are what a key does with the objects under its prefix: what tfk8s
// submit, the agent and the runs commands send (multipart uploads included).
var objectActions = []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"}

// policy is a bucket policy; statements are kept as they are read, so that an
// admin's own survive an edit.
type policy struct {
	Version   string            `json:"Version"`
	Statement []json.RawMessage `json:"Statement"`
}

// statement is one statement of a policy, as withKey writes it.
type statement struct {
	Sid       string                `json:"Sid"`
	Effect    string                `json:"Effect"`
	Principal map[string][]string   `json:"Principal"`
	Action    []string              `json:"Action"`
	Resource  []string              `json:"Resource"`
	Condition map[string]conditions `json:"Condition,omitempty"`
}

type conditions map[string][]string

// sidPrefix marks the statements of a key: its Sids are sidPrefix + access key + a part.
const sidPrefix = "tfk8s-key-"

// withKey returns the bucket policy cur ("" for none) with the statements that let key
// k list, read and write under its prefix, and nothing else: the objects' ARNs under
// the prefix, and listing the bucket only with an s3:prefix under it.
func withKey(cur []byte, bucket string, k Key) ([]byte, error) {
	p, err := parsePolicy(cur)
	if err != nil {
		return nil, err
	}
	who := map[string][]string{"AWS": {k.AccessKeyID}}
	for _, s := range []statement{
		{Sid: sidPrefix + k.AccessKeyID + "-objects", Effect: "Allow", Principal: who, Action: objectActions,
			Resource: []string{"arn:aws:s3:::" + bucket + "/" + k.Prefix + "*"}},
		{Sid: sidPrefix + k.AccessKeyID + "-list", Effect: "Allow", Principal: who, Action: []string{"s3:ListBucket"},
			Resource:  []string{"arn:aws:s3:::" + bucket},
			Condition: map[string]conditions{"StringLike": {"s3:prefix": {k.Prefix + "*"}}}},
	} {
		raw, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		p.Statement = append(p.Statement, raw)
	}
	return json.Marshal(p)
}

// withoutKey returns the bucket policy cur without the statements of the key with
// that access key id; "" when no statement is left.
func withoutKey(cur []byte, accessKeyID string) ([]byte, error) {
	p, err := parsePolicy(cur)
	if err != nil {
		return nil, err
	}
	kept := p.Statement[:0]
	for _, raw := range p.Statement {
		var s struct{ Sid string }
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("reading a statement of the bucket policy: %w", err)
		}
		if !strings.HasPrefix(s.Sid, sidPrefix+accessKeyID+"-") {
			kept = append(kept, raw)
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	p.Statement = kept
	return json.Marshal(p)
}

// parsePolicy reads a bucket policy; "" is an empty one.
func parsePolicy(cur []byte) (policy, error) {
	p := policy{Version: policyVersion}
	if len(strings.TrimSpace(string(cur))) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(cur, &p); err != nil {
		return policy{}, fmt.Errorf("reading the bucket policy: %w", err)
	}
	return p, nil
}
