package printers

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/jsonpath"

	"github.com/customapi/customapi/pkg/resource"
)

// tableConvertor is the rest.TableConvertor NewTableConvertor returns for a
// resource with printer columns.
type tableConvertor struct {
	columns []metav1.TableColumnDefinition
	paths   []*jsonpath.JSONPath       // nil where values[i] is set
	values  []func(runtime.Object) any // PrinterColumn.Value, or nil
	gr      schema.GroupResource
}

// NewTableConvertor returns the rest.TableConvertor of res: it renders an
// object or a list as the Table `kubectl get` prints (the server's answer
// to Accept: application/json;as=Table;g=meta.k8s.io;v=v1). The columns
// are NAME, then res.PrinterColumns in order, then AGE (the time since
// creationTimestamp, as kubectl shows built-in resources, "<unknown>"
// without one). A column's cell is its Value function's result, or else
// its JSONPath evaluated on the object's JSON form: the value itself
// (numbers stay numbers) for one result, the results joined by spaces for
// several, nil for none or a missing field. Without printer columns it is
// k8s.io/apiserver's default convertor (NAME, CREATED AT). The Table's
// resourceVersion, continue and remainingItemCount are the list's. The
// error names the column whose JSONPath does not parse.
func NewTableConvertor(res resource.Resource) (rest.TableConvertor, error) {
	if len(res.PrinterColumns) == 0 {
		return rest.NewDefaultTableConvertor(res.GroupResource()), nil
	}
	c := &tableConvertor{gr: res.GroupResource()}
	c.columns = append(c.columns, metav1.TableColumnDefinition{
		Name: "Name", Type: "string", Format: "name",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["name"],
	})
	for _, pc := range res.PrinterColumns {
		var jp *jsonpath.JSONPath
		if pc.Value == nil {
			jp = jsonpath.New(pc.Name).AllowMissingKeys(true)
			if err := jp.Parse("{" + pc.JSONPath + "}"); err != nil {
				return nil, fmt.Errorf("printers: %s: printer column %q: %w", res.GroupResource(), pc.Name, err)
			}
		}
		c.paths = append(c.paths, jp)
		c.values = append(c.values, pc.Value)
		c.columns = append(c.columns, metav1.TableColumnDefinition{
			Name: pc.Name, Type: pc.Type, Description: pc.Description, Priority: pc.Priority,
		})
	}
	c.columns = append(c.columns, metav1.TableColumnDefinition{
		Name: "Age", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"],
	})
	return c, nil
}

// ConvertToTable renders one object or a list as a Table.
func (c *tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = c.columns
	}
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	add := func(item runtime.Object) error {
		m, err := meta.Accessor(item)
		if err != nil {
			return err
		}
		var content map[string]any
		cells := make([]any, 0, len(c.columns))
		cells = append(cells, m.GetName())
		for i, jp := range c.paths {
			if c.values[i] != nil {
				cells = append(cells, c.values[i](item))
				continue
			}
			if content == nil {
				if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(item); err != nil {
					return err
				}
			}
			cells = append(cells, cellValue(jp, content))
		}
		cells = append(cells, age(m.GetCreationTimestamp()))
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: item}})
		return nil
	}
	var err error
	if meta.IsListType(obj) {
		err = meta.EachListItem(obj, add)
	} else {
		err = add(obj)
	}
	if err != nil {
		return nil, err
	}
	return table, nil
}

// cellValue returns the value of one printer column: the JSON value for a
// single result (numbers stay numbers), a comma-separated text for several,
// nil for none.
func cellValue(jp *jsonpath.JSONPath, content map[string]any) any {
	results, err := jp.FindResults(content)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return nil
	}
	if len(results[0]) == 1 {
		v := results[0][0]
		if v.CanInterface() {
			return v.Interface()
		}
	}
	var b bytes.Buffer
	if err := jp.PrintResults(&b, results[0]); err != nil {
		return nil
	}
	return strings.TrimSpace(b.String())
}

// age renders a creation time as kubectl shows built-in resources' AGE
// ("5m3s", "2d"), or "<unknown>" for none.
func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}
