//go:build conformance

package diagnostics

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"

	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/google/jsonschema-go/jsonschema"
)

// JSONSchemaTool is the tool whose input schema the suite's
// json-schema-2020-12 scenario reads back from tools/list, keyword for
// keyword.
const JSONSchemaTool = "json_schema_2020_12_tool"

// HeaderTool is the tool of the suite's http-custom-header-server-validation
// scenario: its one argument carries the x-mcp-header mark (SEP-2243), so a
// 2026-07-28 client mirrors it in an Mcp-Param-Region header, and go-sdk's
// transport, which reads the mark from the tool's listed input schema,
// refuses (HTTP 400, -32020) a call whose header is missing, is not valid
// Base64 inside =?base64?…?=, or differs from the argument.
const HeaderTool = "test_custom_header"

// headerArgs are test_custom_header's arguments.
type headerArgs struct {
	Region string `json:"region"`
}

func headerArgsSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"region": {Type: "string", Description: "A region, sent in the Mcp-Param-Region header too", Extra: map[string]any{"x-mcp-header": "Region"}},
		},
		Required:             []string{"region"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

func echoRegion(_ context.Context, v any) (pipeline.Effect, error) {
	return text("Region: " + v.(*headerArgs).Region)
}

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

// redPixel is a 1×1 red PNG, encoded by image/png.
var redPixel = func() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // an in-memory encode of a valid image cannot fail
	}
	return b.Bytes()
}()

// silence is a WAV file (RIFF, PCM, mono, 8 kHz, 8 bits) of 80 samples of
// silence: 10 ms.
var silence = func() []byte {
	const rate, samples = 8000, 80
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) } // a bytes.Buffer write cannot fail
	b.WriteString("RIFF")
	w(uint32(36 + samples))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1)) // PCM
	w(uint16(1)) // mono
	w(uint32(rate))
	w(uint32(rate)) // bytes per second
	w(uint16(1))    // block align
	w(uint16(8))    // bits per sample
	b.WriteString("data")
	w(uint32(samples))
	b.Write(bytes.Repeat([]byte{128}, samples)) // 8-bit PCM's zero
	return b.Bytes()
}()

func media(m ...pipeline.Media) (pipeline.Effect, error) { return pipeline.Effect{Media: m}, nil }

var pngMedia = pipeline.Media{Kind: pipeline.Image, MIMEType: "image/png", Data: redPixel}

func imageContent(context.Context) (pipeline.Effect, error) { return media(pngMedia) }

func audioContent(context.Context) (pipeline.Effect, error) {
	return media(pipeline.Media{Kind: pipeline.Audio, MIMEType: "audio/wav", Data: silence})
}

func embeddedResource(context.Context) (pipeline.Effect, error) {
	return media(pipeline.Media{Kind: pipeline.Resource, URI: "test://embedded-resource", MIMEType: "text/plain",
		Text: "This is an embedded resource content."})
}

func multipleContent(context.Context) (pipeline.Effect, error) {
	return pipeline.Effect{Text: "Multiple content types test:", Media: []pipeline.Media{pngMedia,
		{Kind: pipeline.Resource, URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}}}, nil
}

func promptWithImage(context.Context) (pipeline.Effect, error) {
	return pipeline.Effect{Text: "Please analyze the image.", Media: []pipeline.Media{pngMedia}}, nil
}

// resourceArgs are test_prompt_with_embedded_resource's arguments.
type resourceArgs struct {
	ResourceURI string `json:"resourceUri"`
}

func resourceArgsSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:                 "object",
		Properties:           map[string]*jsonschema.Schema{"resourceUri": {Type: "string", Description: "URI of the resource to embed", MinLength: jsonschema.Ptr(1), MaxLength: jsonschema.Ptr(2048)}},
		Required:             []string{"resourceUri"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

func promptWithResource(_ context.Context, v any) (pipeline.Effect, error) {
	a := v.(*resourceArgs)
	return pipeline.Effect{Text: "Please process the embedded resource.", Media: []pipeline.Media{
		{Kind: pipeline.Resource, URI: a.ResourceURI, MIMEType: "text/plain", Text: "Embedded resource content for testing."}}}, nil
}
