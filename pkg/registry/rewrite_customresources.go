package registry

import (
	"context"
	"errors"
	"fmt"
	"sort"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"

	"github.com/customapi/customapi/pkg/storage"
	"github.com/customapi/customapi/pkg/storage/rewrite"
)

// customResourceDefinitions is the resource CustomResourceDefinitions are
// stored as: <prefix>/apiextensions.k8s.io/customresourcedefinitions/<name>.
var customResourceDefinitions = apiextensionsv1.Resource("customresourcedefinitions")

// customResourceTargets are the rewrite targets of the
// CustomResourceDefinitions stored under the registry's prefix (those a
// server with --custom-resource-definitions wrote) and of their custom
// resources; destroy closes their storage. Without a stored
// CustomResourceDefinition both are empty.
type customResourceTargets struct {
	// crds is the entry of the CustomResourceDefinitions themselves, in
	// the registry's media type; nil without any.
	crds *rewrite.Resource
	// crs has one entry per CustomResourceDefinition, sorted by resource;
	// their values are encoded in crMediaType.
	crs         []rewrite.Resource
	crMediaType string
	destroy     []factory.DestroyFunc
}

func (c *customResourceTargets) close() {
	for _, d := range c.destroy {
		d()
	}
	c.destroy = nil
}

// crdScheme is the scheme of the CustomResourceDefinitions' storage codec:
// apiextensions.k8s.io's internal and external versions, as
// k8s.io/apiextensions-apiserver's own scheme has them.
func crdScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	apiextensionsinstall.Install(s)
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}

// openCustomResourceTargets reads the CustomResourceDefinitions stored
// under the registry's prefix, through storage built as the server builds
// theirs (storage.Config.InternalRESTOptionsGetter, storage version
// apiextensions.k8s.io/v1, decoded into the internal version) and, when
// there are any, returns the rewrite entries of the
// CustomResourceDefinitions and, unless customResources is false, of the
// custom resources of each (storage.Config.CustomResourceRESTOptionsGetter,
// objects as unstructured.Unstructured, no storage version: an offline
// rewrite re-encodes a custom resource in the version it is stored in,
// since converting it takes the CustomResourceDefinition's conversion,
// which a server runs). A custom resource whose group and plural is a
// resource of the registry is left to that resource's entry. The storage
// is k8s.io/apiserver's etcd3 store without watch cache or deadlines. On
// error nothing is left open. Errors: the storage cannot be built, or a
// stored CustomResourceDefinition cannot be read (etcd, a key no longer
// configured).
func (r *Registry) openCustomResourceTargets(ctx context.Context, customResources bool) (_ *customResourceTargets, err error) {
	out := &customResourceTargets{crMediaType: storage.CustomResourceMediaType(r.storage.MediaType)}
	defer func() {
		if err != nil {
			out.close()
		}
	}()
	crdGetter, err := r.storage.InternalRESTOptionsGetter(crdScheme(), apiextensionsv1.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("registry: CustomResourceDefinitions: %w", err)
	}
	newCRD := func() runtime.Object { return &apiextensionsinternal.CustomResourceDefinition{} }
	crdStorage, err := out.open(crdGetter, customResourceDefinitions, newCRD(), newCRD,
		func() runtime.Object { return &apiextensionsinternal.CustomResourceDefinitionList{} })
	if err != nil {
		return nil, err
	}
	var list apiextensionsinternal.CustomResourceDefinitionList
	key := "/" + storage.ResourcePrefix(customResourceDefinitions)
	if err := crdStorage.GetList(ctx, key, apistorage.ListOptions{Recursive: true, Predicate: apistorage.Everything}, &list); err != nil {
		return nil, fmt.Errorf("registry: read the CustomResourceDefinitions %s from etcd: %w", storage.Key(r.storage.Prefix, customResourceDefinitions, "", ""), err)
	}
	if len(list.Items) == 0 {
		out.close()
		return out, nil
	}
	tr, ok := storage.TransformerFor(r.getter, customResourceDefinitions)
	if !ok {
		return nil, fmt.Errorf("registry: rewrite %s: the registry has no storage options getter", customResourceDefinitions)
	}
	out.crds = &rewrite.Resource{
		Resource: customResourceDefinitions, Storage: crdStorage, New: newCRD, Transformer: tr,
		StorageVersion: apiextensionsv1.SchemeGroupVersion,
	}
	if !customResources {
		return out, nil
	}
	crGetter, err := r.storage.CustomResourceRESTOptionsGetter()
	if err != nil {
		return nil, fmt.Errorf("registry: custom resources: %w", err)
	}
	own := map[schema.GroupResource]bool{}
	for _, res := range r.resources {
		own[res.GroupResource()] = true
	}
	for _, crd := range list.Items {
		gr := schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
		if gr.Group == "" || gr.Resource == "" || own[gr] {
			continue
		}
		newCR := func() runtime.Object { return &unstructured.Unstructured{} }
		st, err := out.open(crGetter, gr, nil, newCR, func() runtime.Object { return &unstructured.UnstructuredList{} })
		if err != nil {
			return nil, err
		}
		tr, ok := storage.TransformerFor(r.getter, gr)
		if !ok {
			return nil, fmt.Errorf("registry: rewrite %s: the registry has no storage options getter", gr)
		}
		out.crs = append(out.crs, rewrite.Resource{Resource: gr, Storage: st, New: newCR, Transformer: tr})
	}
	sort.Slice(out.crs, func(i, j int) bool { return out.crs[i].Resource.String() < out.crs[j].Resource.String() })
	return out, nil
}

// open builds the undecorated storage of gr from getter's options (no
// watch cache) and records its destroy function.
func (c *customResourceTargets) open(getter generic.RESTOptionsGetter, gr schema.GroupResource, example runtime.Object, newFunc, newListFunc func() runtime.Object) (apistorage.Interface, error) {
	opts, err := getter.GetRESTOptions(gr, example)
	if err != nil {
		return nil, fmt.Errorf("registry: rewrite %s: %w", gr, err)
	}
	st, destroy, err := generic.UndecoratedStorage(opts.StorageConfig, "/"+opts.ResourcePrefix, nil, newFunc, newListFunc, nil, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("registry: rewrite %s: storage: %w", gr, err)
	}
	c.destroy = append(c.destroy, destroy)
	return st, nil
}

// runCustomResources rewrites the custom resources of c into
// c.crMediaType, appending their reports to report; a fatal error of the
// run before (prevErr with an incomplete report) skips them.
func runCustomResources(ctx context.Context, t rewrite.Target, c *customResourceTargets, opts rewrite.Options, report *rewrite.Report, prevErr error) error {
	if len(c.crs) == 0 {
		return prevErr
	}
	if prevErr != nil && !allComplete(*report, len(t.Resources)) {
		return prevErr
	}
	t.MediaType, t.Resources = c.crMediaType, c.crs
	crReport, err := rewrite.Run(ctx, t, opts)
	report.Resources = append(report.Resources, crReport.Resources...)
	return errors.Join(prevErr, err)
}

// allComplete says whether report has the n entries of a run and each is
// Complete.
func allComplete(report rewrite.Report, n int) bool {
	if len(report.Resources) != n {
		return false
	}
	for _, r := range report.Resources {
		if !r.Complete {
			return false
		}
	}
	return true
}
