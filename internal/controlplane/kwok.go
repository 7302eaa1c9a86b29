package controlplane

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// stages is what KWOK does in place of kubelets, container runtimes and a volume
// provisioner: see the comments in the file.
//
//go:embed stages.yaml
var stages []byte

// BrokenImageTag is the word that marks an image as one that never pulls on the
// simulated nodes: a container image whose tag contains it keeps its Pod Pending in
// ImagePullBackOff, never Ready (stages.yaml says so to KWOK).
const BrokenImageTag = "broken"

// Simulated nodes carry these annotations: KWOK manages the nodes with the first; the
// node stage gives each node the InternalIP that the second names.
const (
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	kwokNodeValue      = "fake"
	nodeIPAnnotation   = "kubecel.dev/node-ip"
)

// DefaultNodes is the number of simulated nodes of a full control plane.
const DefaultNodes = 3

// simulatedNode is the Node object of the i-th simulated node (from 0): its own Pod
// CIDR, as node IPAM would give it, and no taints.
func simulatedNode(i int) *corev1.Node {
	name := fmt.Sprintf("kwok-node-%d", i+1)
	cidr := fmt.Sprintf("10.244.%d.0/24", i+1)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
			Annotations: map[string]string{
				kwokNodeAnnotation: kwokNodeValue,
				nodeIPAnnotation:   fmt.Sprintf("10.250.0.%d", i+1),
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
	}
}

// createNodes creates the simulated nodes.
func createNodes(ctx context.Context, kube kubernetes.Interface, n int) error {
	for i := range n {
		_, err := kube.CoreV1().Nodes().Create(ctx, simulatedNode(i), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node: %w", err)
		}
	}
	return nil
}

// startKWOK runs the KWOK controller on the nodes with the KWOK annotation, with the
// stages of stages.yaml. Its work directory (where it would otherwise read
// ~/.kwok/kwok.yaml) is dir/kwok, so nothing of the user's is read.
func startKWOK(binDir, dir, kubeconfig string) (*process, error) {
	work := filepath.Join(dir, "kwok")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, err
	}
	config := filepath.Join(work, "stages.yaml")
	if err := os.WriteFile(config, stages, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(binDir, "kwok"),
		"--kubeconfig="+kubeconfig,
		"--config="+config,
		"--manage-nodes-with-annotation-selector="+kwokNodeAnnotation+"="+kwokNodeValue,
	)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+work)
	return startProcess(cmd, filepath.Join(dir, "kwok.log"))
}

// waitNodesReady waits until n nodes are Ready (KWOK applied the node stage), for at
// most timeout, or fails when KWOK exits.
func waitNodesReady(ctx context.Context, kube kubernetes.Interface, kwok *process, n int, timeout time.Duration) error {
	return poll(ctx, timeout, func() (bool, string, error) {
		if exited, err := kwok.exited(); exited {
			return false, "", fmt.Errorf("kwok exited: %v", err)
		}
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		var notReady []string
		for _, node := range nodes.Items {
			if !nodeReady(&node) {
				notReady = append(notReady, node.Name)
			}
		}
		if len(nodes.Items) < n || len(notReady) > 0 {
			return false, fmt.Sprintf("%d nodes, not Ready: %s", len(nodes.Items), strings.Join(notReady, ", ")), nil
		}
		return true, "", nil
	})
}

// nodeReady reports whether a node is Ready and without the not-ready taint, so that
// Pods can be scheduled on it.
func nodeReady(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady {
			return false
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// poll calls cond every 100ms until it is done, fails, or timeout passes; the error
// then says what cond said last.
func poll(ctx context.Context, timeout time.Duration, cond func() (done bool, last string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		done, last, err := cond()
		if done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s", ctx.Err(), last)
		case <-tick.C:
		}
	}
}
