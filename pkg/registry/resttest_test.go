package registry_test

// The REST conformance tester kube-apiserver runs against its registries
// (k8s.io/apiserver/pkg/registry/rest/resttest, through
// registry/generic/testing), run against customapi's registry store of
// customs.

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistrytest "k8s.io/apiserver/pkg/registry/generic/testing"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/customapitest"
	"github.com/customapi/customapi/pkg/registry"
	"github.com/customapi/customapi/pkg/storage"
)

// restTester returns the tester on a fresh store of customs: the tester
// reuses its object names in every Test* method, so the methods must not
// share a store. The watch cache is off, as in kube's own registry tests
// (generic.UndecoratedStorage): the tester compares what the store returns
// with objects it reads from storage directly, and cached objects carry
// kind and apiVersion where those do not. The suite's other tests cover the
// watch cache.
func restTester(t *testing.T) *genericregistrytest.Tester {
	t.Helper()
	reg := customapitest.OpenRegistry(t, customapitest.RegistryOptions{Storage: storage.Config{DisableWatchCache: true}}, install.Customs)
	return genericregistrytest.New(t, registry.GenericStore(reg.Registry, install.Customs.GroupVersionResource()))
}

func validCustom() *testv1.Custom {
	return &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "foo"}, Spec: testv1.CustomSpec{Message: "hello", Replicas: 1}}
}

func TestRESTCreate(t *testing.T) {
	invalid := validCustom()
	invalid.Spec.Replicas = -1
	restTester(t).TestCreate(validCustom(), invalid)
}

func TestRESTUpdate(t *testing.T) {
	restTester(t).TestUpdate(validCustom(),
		func(obj runtime.Object) runtime.Object {
			c := obj.(*testv1.Custom)
			c.Spec.Message = "updated"
			return c
		},
		func(obj runtime.Object) runtime.Object {
			c := obj.(*testv1.Custom)
			c.Spec.Replicas = -1
			return c
		})
}

func TestRESTDelete(t *testing.T) { restTester(t).TestDelete(validCustom()) }

func TestRESTGet(t *testing.T) { restTester(t).TestGet(validCustom()) }

func TestRESTList(t *testing.T) { restTester(t).TestList(validCustom()) }

func TestRESTWatch(t *testing.T) {
	restTester(t).TestWatch(validCustom(),
		[]labels.Set{{}},
		[]labels.Set{{"a": "c"}},
		[]fields.Set{{"metadata.name": "foo"}},
		[]fields.Set{{"metadata.name": "bar"}},
	)
}
