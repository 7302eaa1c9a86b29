package controlplane_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
)

func TestMain(m *testing.M) {
	if os.Getenv(orphanEnv) != "" {
		runOrphanedControlPlane()
		return
	}
	testenv.Main(m, controlplane.Options{ControllerManager: true})
}

var (
	widgets    = schema.GroupVersionResource{Group: "test.kubecel.dev", Version: "v1", Resource: "widgets"}
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func TestServerVersion(t *testing.T) {
	info, err := testenv.Kube(t).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if info.GitVersion != "v1.36.3" {
		t.Errorf("server version = %q, want v1.36.3 (version ldflags missing from the build?)", info.GitVersion)
	}
}

func TestCustomResourceApplyAndInformer(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t)
	installWidgetCRD(t)
	dyn := testenv.Dynamic(t)

	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.kubecel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": ns},
		"spec":     map[string]any{"size": int64(3)},
	}}
	if _, err := dyn.Resource(widgets).Namespace(ns).Create(ctx, widget, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create widget: %v", err)
	}

	// Watch ConfigMaps in the namespace through a dynamic informer before applying.
	informer := dynamicinformer.NewFilteredDynamicInformer(dyn, configMaps, ns, 0, cache.Indexers{}, nil)
	informerCtx, stop := context.WithCancel(ctx)
	defer stop()
	go informer.Informer().RunWithContext(informerCtx)
	if !cache.WaitForCacheSync(informerCtx.Done(), informer.Informer().HasSynced) {
		t.Fatal("informer did not sync")
	}

	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "from-w1", "namespace": ns},
		"data":     map[string]any{"size": "3"},
	}}
	applied, err := dyn.Resource(configMaps).Namespace(ns).Apply(ctx, "from-w1", cm, metav1.ApplyOptions{FieldManager: "kubecel-test", Force: true})
	if err != nil {
		t.Fatalf("server-side apply: %v", err)
	}
	if got := applied.GetManagedFields(); len(got) != 1 || got[0].Manager != "kubecel-test" || got[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("managedFields = %+v, want one Apply entry by kubecel-test", got)
	}

	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		obj, exists, err := informer.Informer().GetStore().GetByKey(ns + "/from-w1")
		if err != nil || !exists {
			return false, fmt.Sprintf("not in informer cache yet (err %v)", err)
		}
		data, _, _ := unstructured.NestedStringMap(obj.(*unstructured.Unstructured).Object, "data")
		if diff := cmp.Diff(map[string]string{"size": "3"}, data); diff != "" {
			return false, "data differs (-want +got):\n" + diff
		}
		return true, ""
	})
}

func TestGarbageCollectorDeletesOrphans(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t)
	cms := testenv.Kube(t).CoreV1().ConfigMaps(ns)

	owner := newConfigMap(ns, "owner")
	created, err := cms.Create(ctx, owner, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	child := newConfigMap(ns, "child")
	child.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: created.Name, UID: created.UID}}
	if _, err := cms.Create(ctx, child, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		_, err := cms.Get(ctx, "child", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("child still there (err %v): is the garbage collector running?", err)
	})
}

func installWidgetCRD(t *testing.T) {
	t.Helper()
	client := apiextensionsclient.NewForConfigOrDie(testenv.Config(t)).ApiextensionsV1().CustomResourceDefinitions()
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.test.kubecel.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "test.kubecel.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: &preserve},
					},
				}},
			}},
		},
	}
	ctx := t.Context()
	if _, err := client.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create CRD: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		got, err := client.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, "CRD not established"
	})
}

func newConfigMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
}
