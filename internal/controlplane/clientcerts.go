package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tfk8s/tfk8s/internal/pki"
)

// WriteClientKubeconfig writes at path a kubeconfig that reaches the API server as
// user, a member of groups, through a client certificate the cluster's CA signs,
// valid for validity. Each program of a local node gets an identity of its own this
// way (system:node:NAME in system:nodes for the kubelet, authorized by the Node
// authorizer), so that none holds the administrator's token.
func (cp *ControlPlane) WriteClientKubeconfig(path, user string, groups []string, validity time.Duration) error {
	caCert, caKey, err := loadCA(cp.creds)
	if err != nil {
		return fmt.Errorf("issuing a client certificate for %s: %w", user, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	certPEM, err := pki.IssueClient(pki.Names{CommonName: user, Organization: groups}, key.Public(), caCert, caKey, time.Now(), validity)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["tfk8s"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.creds.caCertPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM,
		ClientKeyData:         pemECKey(key),
	}
	cfg.Contexts["tfk8s"] = &clientcmdapi.Context{Cluster: "tfk8s", AuthInfo: user}
	cfg.CurrentContext = "tfk8s"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing the kubeconfig of %s: %w", user, err)
	}
	return nil
}
