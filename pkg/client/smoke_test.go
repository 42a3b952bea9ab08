package client_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/customapi/customapi/pkg/customapitest"
)

func TestSmoke(t *testing.T) {
	e := newEnv(t, customapitest.StoreOptions{})
	c, err := e.c.Create(t.Context(), custom("c1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", c)
	t.Logf("%v %v", e.keys(t), e.snapshot(t))
	g, err := e.c.Get(t.Context(), "c1", metav1.GetOptions{})
	t.Logf("%+v %v", g, err)
}
