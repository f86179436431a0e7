//go:build conformance

package diagnostics

import (
	"context"

	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/google/jsonschema-go/jsonschema"
)

// JSONSchemaTool is the tool whose input schema the suite's
// json-schema-2020-12 scenario reads back from tools/list, keyword for
// keyword.
const JSONSchemaTool = "json_schema_2020_12_tool"

func simpleText(context.Context) (pipeline.Effect, error) {
	return text("This is a simple text response for testing.")
}

func simplePrompt(context.Context) (pipeline.Effect, error) {
	return text("This is a simple prompt for testing.")
}

// promptArgs are test_prompt_with_arguments's arguments.
type promptArgs struct {
	Arg1 string `json:"arg1"`
	Arg2 string `json:"arg2"`
}

func promptArgsSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"arg1": {Type: "string", Description: "First test argument"},
			"arg2": {Type: "string", Description: "Second test argument"},
		},
		Required:             []string{"arg1", "arg2"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

func promptWithArguments(_ context.Context, v any) (pipeline.Effect, error) {
	a := v.(*promptArgs)
	return text("Prompt with arguments: arg1='" + a.Arg1 + "', arg2='" + a.Arg2 + "'")
}

// contactArgs are json_schema_2020_12_tool's arguments.
type contactArgs struct {
	Name    string `json:"name,omitempty"`
	Address *struct {
		Street string `json:"street,omitempty"`
		City   string `json:"city,omitempty"`
	} `json:"address,omitempty"`
	ContactMethod string `json:"contactMethod,omitempty"`
	Phone         string `json:"phone,omitempty"`
	Email         string `json:"email,omitempty"`
}

// jsonSchema2020 is the suite's schema (SEP-1613, SEP-2106): a person with
// a phone or an e-mail address, the one named by contactMethod required.
func jsonSchema2020() *jsonschema.Schema {
	str := func() *jsonschema.Schema { return &jsonschema.Schema{Type: "string"} }
	return &jsonschema.Schema{
		Schema: "https://json-schema.org/draft/2020-12/schema",
		Type:   "object",
		Defs: map[string]*jsonschema.Schema{
			"address": {Anchor: "addressDef", Type: "object", Properties: map[string]*jsonschema.Schema{"street": str(), "city": str()}},
		},
		Properties: map[string]*jsonschema.Schema{
			"name":          str(),
			"address":       {Ref: "#/$defs/address"},
			"contactMethod": {Type: "string", Enum: []any{"phone", "email"}},
			"phone":         str(),
			"email":         str(),
		},
		AllOf: []*jsonschema.Schema{{AnyOf: []*jsonschema.Schema{{Required: []string{"phone"}}, {Required: []string{"email"}}}}},
		If: &jsonschema.Schema{
			Properties: map[string]*jsonschema.Schema{"contactMethod": {Const: jsonschema.Ptr[any]("phone")}},
			Required:   []string{"contactMethod"},
		},
		Then:                 &jsonschema.Schema{Required: []string{"phone"}},
		Else:                 &jsonschema.Schema{Required: []string{"email"}},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

func contact(_ context.Context, v any) (pipeline.Effect, error) {
	a := v.(*contactArgs)
	if a.Phone != "" && (a.ContactMethod == "phone" || a.Email == "") {
		return text("Contact by phone.")
	}
	return text("Contact by e-mail.")
}
