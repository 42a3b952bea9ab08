package numbers_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/customapi/customapi/pkg/numbers"
)

// A user's type with integers in every position Check follows.
type inner struct {
	Count  int8    `json:"count"`
	Ratio  float32 `json:"ratio,omitempty"`
	Weight *uint16 `json:"weight,omitempty"`
}

type Embedded struct {
	Level int16 `json:"level"`
}

type numbersObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Embedded
	Inline   inner              `json:",inline"`
	Replicas int32              `json:"replicas"`
	Big      int64              `json:"big"`
	Unsigned uint32             `json:"unsigned"`
	Ptr      *int32             `json:"ptr,omitempty"`
	Items    []inner            `json:"items"`
	ByName   map[string]int32   `json:"byName"`
	Nested   map[string][]inner `json:"nested"`
	Port     intstr.IntOrString `json:"port"`
	Free     any                `json:"free"`
	Skipped  int32              `json:"-"`
	NoTag    int8
}

func TestCheck(t *testing.T) {
	typ := reflect.TypeFor[*numbersObject]()
	for _, tc := range []struct {
		doc   string
		field string // "" for no error
	}{
		{`{"replicas": 2147483647, "big": -9223372036854775808, "unsigned": 4294967295}`, ""},
		{`{"replicas": 10000000000}`, "replicas"},
		{`{"replicas": 4294967297}`, "replicas"},
		{`{"replicas": -2147483649}`, "replicas"},
		{`{"replicas": 1.5}`, "replicas"},
		{`{"replicas": 1.0}`, ""},
		{`{"replicas": 1e3}`, ""},
		{`{"replicas": 1e100}`, "replicas"},
		{`{"replicas": "1"}`, "replicas"},
		{`{"replicas": true}`, "replicas"},
		{`{"replicas": null}`, ""},
		{`{"big": 9223372036854775808}`, "big"},
		{`{"unsigned": -1}`, "unsigned"},
		{`{"ptr": 2147483648}`, "ptr"},
		{`{"level": 40000}`, "level"},
		{`{"count": 128}`, "count"},
		{`{"ratio": 1e39}`, "ratio"},
		{`{"ratio": 1.5, "weight": 65535}`, ""},
		{`{"weight": 65536}`, "weight"},
		{`{"items": [{"count": 1}, {"count": 300}]}`, "items[1].count"},
		{`{"byName": {"a": 1, "b": 2147483648}}`, "byName[b]"},
		{`{"nested": {"x": [{"count": -129}]}}`, "nested[x][0].count"},
		{`{"port": 99999999999, "free": 1e400, "unknown": 1e400, "NoTag": 1}`, ""},
		{`{"NoTag": 200}`, "NoTag"},
		{`{"metadata": {"generation": 1.5}}`, "metadata.generation"},
		{`{"$patch": "replace", "items": [{"$patch": "delete"}, {"count": 1}]}`, ""},
	} {
		t.Run(tc.doc, func(t *testing.T) {
			d := json.NewDecoder(strings.NewReader(tc.doc))
			d.UseNumber()
			var content map[string]any
			if err := d.Decode(&content); err != nil {
				t.Fatal(err)
			}
			errs := numbers.Check(nil, content, typ)
			switch {
			case tc.field == "" && len(errs) != 0:
				t.Fatalf("errors %v, want none", errs)
			case tc.field != "" && (len(errs) != 1 || errs[0].Field != tc.field):
				t.Fatalf("errors %v, want one for %s", errs, tc.field)
			}
		})
	}
	// Values decoded without UseNumber (float64) and Go integers.
	if errs := numbers.Check(nil, map[string]any{"replicas": float64(1e10), "big": int64(5)}, typ); len(errs) != 1 || errs[0].Field != "replicas" {
		t.Fatalf("float64: %v", errs)
	}
}
