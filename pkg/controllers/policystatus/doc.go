// Package policystatus is the ValidatingAdmissionPolicy status controller:
// as kube-controller-manager's (k8s.io/kubernetes
// pkg/controller/validatingadmissionpolicystatus, reimplemented here), it
// type-checks each policy against the schemas of the kinds the policy
// matches and writes the result to the policy's status, as a client of a
// server: it reads the policies and writes their status through the
// rest.Config its controllers.Runner gives it (a server's loopback door).
//
// For each ValidatingAdmissionPolicy whose metadata.generation is newer
// than its status.observedGeneration, the controller runs upstream's type
// checker (k8s.io/apiserver pkg/admission/plugin/policy/validating
// TypeChecker) over spec.validations (expressions and messageExpressions)
// with:
//
//   - the kinds of spec.matchConstraints.resourceRules, resolved by a
//     RESTMapper of the registry's resources (every served version; rules
//     naming resources the registry does not serve, and "*" rules, are not
//     checked, as upstream skips what it cannot resolve);
//   - their schemas, from the OpenAPI definitions of the registry's
//     resources (upstream's resolver.DefinitionsSchemaResolver over
//     resource.OpenAPIDefinitionsOf and the registry's scheme), and the
//     schema of spec.paramKind when it is served.
//
// It then writes status.observedGeneration (the generation checked) and
// status.typeChecking.expressionWarnings (one per expression with
// problems, fieldRef such as spec.validations[0].expression, the warning
// naming the kind: "test/v1, Kind=Custom: ERROR: <input>:1:12: undefined
// field 'replicaz'") through the policy's status subresource, with the
// field manager ControllerName. Like kube's, it writes no conditions.
// Status writes go through the server's handler chain as the server's own
// identity, so they are admitted and audited as any request.
//
// A server (pkg/server) runs it for every registry it serves with
// batteries.ValidatingAdmissionPolicies, behind its Lease
// kube-system/customapi-validatingadmissionpolicy-status (pkg/controllers):
//
//	c, err := policystatus.New(reg)
//	if err != nil {
//		return err
//	}
//	r, err := controllers.NewRunner(controllers.Config{Config: loopback, Elect: true, Identity: id}, c)
//	if err != nil {
//		return err
//	}
//	r.Run(ctx) // until ctx ends
package policystatus
