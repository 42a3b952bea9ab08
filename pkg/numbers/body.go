package numbers

import (
	"bytes"
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// CheckYAML is Check for data, a YAML (or JSON) document holding an
// object, as the API server reads server-side apply YAML: the document is
// converted to JSON (sigs.k8s.io/yaml) and checked with [CheckJSON]. A body
// that does not convert has nothing to check (nil): the decoder that reads
// it next refuses it. Errors are field.Invalid at the fields' paths under
// path, which may be nil.
func CheckYAML(path *field.Path, data []byte, goType reflect.Type) field.ErrorList {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil
	}
	return CheckJSON(path, js, goType)
}

// CheckJSON is Check for data, a JSON document holding an object (a merge
// patch or strategic merge patch body), decoded once keeping each number's
// literal (json.Number), so that an error shows the value as the client
// wrote it (10000000000, not 1e+10). Unlike [CheckYAML] it does not run the
// YAML parser over a body that is JSON already. A body that does not decode
// to an object has nothing to check (nil): the decoder that reads it next
// refuses it. Errors are field.Invalid at the fields' paths under path,
// which may be nil.
func CheckJSON(path *field.Path, data []byte, goType reflect.Type) field.ErrorList {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var content map[string]any
	if err := d.Decode(&content); err != nil {
		return nil
	}
	return Check(path, content, goType)
}
