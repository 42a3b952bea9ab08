package customapitest_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/customapi/customapi/pkg/apis/test/install"
	testv1 "github.com/customapi/customapi/pkg/apis/test/v1"
	"github.com/customapi/customapi/pkg/client"
	"github.com/customapi/customapi/pkg/customapitest"
)

var customs = schema.GroupVersionResource{Group: "test", Version: "v1", Resource: "customs"}

// Start serves resources for one test; the in-process client and the
// dynamic client see the same objects.
func TestStart(t *testing.T) {
	s := customapitest.Start(t, install.Customs)
	all, err := client.For[*testv1.Custom, *testv1.CustomList](s.Registry(), install.Customs)
	if err != nil {
		t.Fatal(err)
	}
	c := all.Namespace("default")
	created, err := c.Create(context.Background(), &testv1.Custom{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Dynamic.Resource(customs).Namespace("default").Get(t.Context(), "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetUID() != created.UID {
		t.Fatalf("HTTP sees uid %s, in-process created %s", got.GetUID(), created.UID)
	}
}
