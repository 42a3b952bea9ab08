package bench

import (
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1 "github.com/customapi/customapi/pkg/apis/bench/v1"
)

// sample is the benchmark object: 10 labels, 5 strings, 20 integers.
type sample = benchv1.Sample

// newSample returns the sample of the given name (about 600 bytes of JSON).
func newSample(apiVersion, kind, namespace, name string) *sample {
	s := &sample{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{}},
	}
	for i := range 10 {
		s.Labels["bench.customapi.io/label-"+strconv.Itoa(i)] = "value-" + strconv.Itoa(i)
	}
	for i := range 5 {
		s.Spec.Strings = append(s.Spec.Strings, fmt.Sprintf("string value number %d", i))
	}
	for i := range 20 {
		s.Spec.Numbers = append(s.Spec.Numbers, int64(1000000+i))
	}
	return s
}

// sampleJSON encodes a sample.
func sampleJSON(s *sample) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a fixed struct always encodes
	}
	return b
}

// setFirstNumber sets spec.numbers[0], adding it when a server dropped the
// list (a kubeconfig target whose schema lacks it).
func setFirstNumber(spec *benchv1.SampleSpec, v int64) {
	if len(spec.Numbers) == 0 {
		spec.Numbers = []int64{v}
		return
	}
	spec.Numbers[0] = v
}
