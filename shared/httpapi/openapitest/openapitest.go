// Package openapitest checks that a document is valid OpenAPI 3.1, for the tests of every
// package that publishes one (httpapi's own, and the service's whole interface).
package openapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pb33f/libopenapi/datamodel"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// OAS31SchemaID is the id of the official OpenAPI 3.1 JSON Schema
// (OAI/OpenAPI-Specification schemas/v3.1/schema.json).
const OAS31SchemaID = "https://spec.openapis.org/oas/3.1/schema/2022-10-07"

// Validate checks doc against the official OpenAPI 3.1 JSON Schema, and every Schema Object in
// it against the JSON Schema 2020-12 meta-schema (the OAS schema treats Schema Objects as
// opaque, so they need the second check). It returns the number of Schema Objects checked.
//
// The OAS schema text comes embedded in github.com/pb33f/libopenapi/datamodel
// (OpenAPI31SchemaData), a maintained OpenAPI library, rather than copied into this
// repository; santhosh-tekuri/jsonschema evaluates it.
func Validate(doc []byte) (schemas int, err error) {
	oas, err := jsonschema.UnmarshalJSON(strings.NewReader(datamodel.OpenAPI31SchemaData))
	if err != nil {
		return 0, fmt.Errorf("parse the OAS 3.1 schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(OAS31SchemaID, oas); err != nil {
		return 0, err
	}
	oasSchema, err := c.Compile(OAS31SchemaID)
	if err != nil {
		return 0, fmt.Errorf("compile the OAS 3.1 schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return 0, fmt.Errorf("document is not JSON: %w", err)
	}
	if err := oasSchema.Validate(inst); err != nil {
		return 0, fmt.Errorf("document is not valid OpenAPI 3.1: %w", err)
	}

	sc := jsonschema.NewCompiler()
	sc.DefaultDraft(jsonschema.Draft2020)
	if err := sc.AddResource("mem://openapi.json", inst); err != nil {
		return 0, err
	}
	var tree any
	if err := json.Unmarshal(doc, &tree); err != nil {
		return 0, err
	}
	ptrs := schemaPointers(tree, "")
	var errs []error
	for _, ptr := range ptrs {
		if _, err := sc.Compile("mem://openapi.json#" + ptr); err != nil {
			errs = append(errs, fmt.Errorf("schema at %s is not valid JSON Schema 2020-12: %w", ptr, err))
		}
	}
	return len(ptrs), errors.Join(errs...)
}

// schemaPointers returns the JSON pointers of every Schema Object in an OpenAPI document:
// values of "schema" members and the members of components.schemas.
func schemaPointers(v any, at string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			ptr := at + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			switch {
			case k == "schema":
				out = append(out, ptr)
			case at == "/components/schemas":
				out = append(out, ptr)
			default:
				out = append(out, schemaPointers(child, ptr)...)
			}
		}
	case []any:
		for i, child := range x {
			out = append(out, schemaPointers(child, at+"/"+strconv.Itoa(i))...)
		}
	}
	return out
}
