package numbers

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

type walkObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Replicas int32            `json:"replicas"`
		Ratio    float32          `json:"ratio"`
		Ports    []uint16         `json:"ports"`
		Limits   map[string]int64 `json:"limits"`
		Data     []byte           `json:"data"`
	} `json:"spec"`
}

// The walk vouches for a body whose numbers fit (no decode), self-described
// as k8s.io/apimachinery's encoder writes it, and not for one whose numbers
// do not.
func TestCBORWalkVouches(t *testing.T) {
	var o walkObject
	o.APIVersion, o.Kind, o.Name, o.Namespace = "v1", "Walk", "w", "default"
	o.Labels = map[string]string{"a": "b"}
	o.CreationTimestamp = metav1.Now()
	o.Spec.Replicas, o.Spec.Ratio, o.Spec.Ports = 3, 0.5, []uint16{80, 65535}
	o.Spec.Limits, o.Spec.Data = map[string]int64{"cpu": -1 << 62}, []byte("bytes")
	body, err := cbordirect.Marshal(&o)
	if err != nil {
		t.Fatal(err)
	}
	body = append([]byte{0xd9, 0xd9, 0xf7}, body...)
	typ := reflect.TypeFor[*walkObject]()
	if w := (cborWalk{data: body}); !w.value(typ) {
		t.Fatalf("the walk does not vouch for a body that fits: %x", body)
	}
	bad, err := cbordirect.Marshal(map[string]any{"spec": map[string]any{"ports": []any{int64(80), int64(65536)}}})
	if err != nil {
		t.Fatal(err)
	}
	if w := (cborWalk{data: bad}); w.value(typ) {
		t.Fatal("the walk vouches for a port of 65536")
	}
	if errs := CheckCBOR(nil, bad, typ); len(errs) != 1 || errs[0].Field != "spec.ports[1]" {
		t.Fatalf("CheckCBOR: %v, want one error for spec.ports[1]", errs)
	}
}
