package batteries

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// The CEL checks of the admission kinds: every expression is compiled as
// the upstream admission plugins compile it (k8s.io/apiserver
// pkg/admission/plugin/cel, with the expression accessors of the webhook
// match conditions and of the validating and mutating policy plugins), in
// upstream's base environment at the default compatibility version with
// strict cost (environment.NewExpressions: what a new expression may use),
// with the variables the expression is evaluated with. Only syntax, the
// declared variables and functions and the result type are checked here:
// object and params are dynamically typed; the schema of the matched kinds
// is the policy status controller's business (pkg/controllers/policystatus).
//
// kube-apiserver compiles an update's expressions that were already stored
// in the wider environment.StoredExpressions; the registry's Validate hook
// does not see the stored object, so every expression is compiled as new
// here (the two environments differ only across versions of the CEL
// libraries).

// celVariables selects the optional variables of an expression.
type celVariables struct {
	params, authorizer bool
}

func (v celVariables) declarations() plugincel.OptionalVariableDeclarations {
	return plugincel.OptionalVariableDeclarations{HasParams: v.params, HasAuthorizer: v.authorizer}
}

var (
	statelessCompilerOnce sync.Once
	statelessCompiler     plugincel.Compiler
)

// sharedCompiler is the compiler of expressions without composition
// (match conditions, and policies without variables), built once.
func sharedCompiler() plugincel.Compiler {
	statelessCompilerOnce.Do(func() {
		statelessCompiler = plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	})
	return statelessCompiler
}

// policyCompiler compiles the expressions of one policy: with a composited
// compiler when the policy has variables (each variable compiled into it
// is declared for the expressions after it), else with the shared one.
type policyCompiler struct {
	compiler  plugincel.Compiler
	composite *plugincel.CompositedCompiler
	err       error
}

func newPolicyCompiler(composition bool) *policyCompiler {
	if !composition {
		return &policyCompiler{compiler: sharedCompiler()}
	}
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return &policyCompiler{compiler: sharedCompiler(), err: err}
	}
	return &policyCompiler{compiler: c, composite: c}
}

// compile compiles one expression and converts a compile error into the
// field error kube answers: Invalid with the detail (compilation failed:
// ..., or must evaluate to ...), Required, or Internal.
func (c *policyCompiler) compile(acc plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations, p *field.Path) field.ErrorList {
	var res plugincel.CompilationResult
	if c == nil {
		res = sharedCompiler().CompileCELExpression(acc, decls, environment.NewExpressions)
	} else {
		res = c.compiler.CompileCELExpression(acc, decls, environment.NewExpressions)
	}
	return celError(res.Error, acc, p)
}

func celError(err *apiservercel.Error, acc plugincel.ExpressionAccessor, p *field.Path) field.ErrorList {
	if err == nil {
		return nil
	}
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.ErrorList{field.Required(p, err.Detail)}
	case apiservercel.ErrorTypeInvalid:
		return field.ErrorList{field.Invalid(p, acc.GetExpression(), err.Detail)}
	default:
		return field.ErrorList{field.InternalError(p, errors.New(err.Detail))}
	}
}

// compileMatchCondition compiles a match condition (a bool); c nil: the
// shared compiler (match conditions never see a policy's variables).
func compileMatchCondition(c *policyCompiler, expr string, vars celVariables, p *field.Path) field.ErrorList {
	return c.compile(&matchconditions.MatchCondition{Expression: expr}, vars.declarations(), p)
}

// variable compiles a variable into the composition.
func (c *policyCompiler) variable(name, expr string, vars celVariables, p *field.Path) field.ErrorList {
	if c.composite == nil {
		if c.err != nil {
			return field.ErrorList{field.InternalError(p, fmt.Errorf("variable composition: %w", c.err))}
		}
		return field.ErrorList{field.InternalError(p, errors.New("variable composition is not allowed"))}
	}
	acc := &validating.Variable{Name: name, Expression: expr}
	res := c.composite.CompileAndStoreVariable(acc, vars.declarations(), environment.NewExpressions)
	return celError(res.Error, acc, p)
}

// validation compiles a validation's expression (a bool).
func (c *policyCompiler) validation(expr string, vars celVariables, p *field.Path) field.ErrorList {
	return c.compile(&validating.ValidationCondition{Expression: expr}, vars.declarations(), p)
}

// messageExpression compiles a validation's messageExpression (a string).
func (c *policyCompiler) messageExpression(expr string, vars celVariables, p *field.Path) field.ErrorList {
	return c.compile(&validating.MessageExpressionCondition{MessageExpression: expr}, vars.declarations(), p)
}

// auditAnnotation compiles an audit annotation's valueExpression (a string
// or null).
func (c *policyCompiler) auditAnnotation(expr string, vars celVariables, p *field.Path) field.ErrorList {
	return c.compile(&validating.AuditAnnotationCondition{ValueExpression: expr}, vars.declarations(), p)
}

// applyConfiguration compiles a mutation's apply configuration (an Object),
// with the patch types declared.
func (c *policyCompiler) applyConfiguration(expr string, vars celVariables, p *field.Path) field.ErrorList {
	decls := vars.declarations()
	decls.HasPatchTypes = true
	return c.compile(&patch.ApplyConfigurationCondition{Expression: expr}, decls, p)
}

// jsonPatch compiles a mutation's JSON patch (a list of JSONPatch), with the
// patch types declared.
func (c *policyCompiler) jsonPatch(expr string, vars celVariables, p *field.Path) field.ErrorList {
	decls := vars.declarations()
	decls.HasPatchTypes = true
	return c.compile(&patch.JSONPatchCondition{Expression: expr}, decls, p)
}
