package numbers

import (
	"bytes"
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// CheckYAML is Check for data, a JSON or YAML document holding an object
// (JSON is YAML): a YAML body is converted to JSON (sigs.k8s.io/yaml, as
// the API server reads apply YAML) and decoded keeping each number's
// literal (json.Number), so that an error shows the value as the client
// wrote it (10000000000, not 1e+10). A body that does not convert or
// decode to an object has nothing to check (nil): the decoder that reads it
// next refuses it. Errors are field.Invalid at the fields' paths under
// path, which may be nil.
func CheckYAML(path *field.Path, data []byte, goType reflect.Type) field.ErrorList {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	var content map[string]any
	if err := d.Decode(&content); err != nil {
		return nil
	}
	return Check(path, content, goType)
}
