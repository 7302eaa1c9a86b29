package engine

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// RulesKey is the ConfigMap key that holds the rules file.
const RulesKey = "rules.yaml"

// ConfigMapSource reads rules from the key rules.yaml of a ConfigMap. It only needs
// `get` on that one ConfigMap.
type ConfigMapSource struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string

	mu   sync.Mutex
	last *corev1.ConfigMap
}

func (s *ConfigMapSource) Read(ctx context.Context) ([]byte, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.last = cm
	s.mu.Unlock()
	data, ok := cm.Data[RulesKey]
	if !ok {
		return nil, fmt.Errorf("configmap %s/%s has no key %q", s.Namespace, s.Name, RulesKey)
	}
	return []byte(data), nil
}

func (s *ConfigMapSource) String() string { return "configmap " + s.Namespace + "/" + s.Name }

// Last returns the ConfigMap as last read (nil before the first read), for Events.
func (s *ConfigMapSource) Last() *corev1.ConfigMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}
