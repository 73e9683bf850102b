package schema

import "fmt"

// ValidationErrorSchema documents ValidationError under the name docs/api.md §10.1 gives it.
var ValidationErrorSchema = Object(
	Req("type", String().Describe("Error type (Pydantic v2 name); match on this and on loc.")),
	Req("loc", Array(AnyOf(String(), Integer())).Describe(`Path to the value: "body", "query" or "path", then member names and array indexes.`)),
	Req("msg", String().Describe("Human-readable message; do not match on it.")),
	Prop("input", Any().Describe("The offending value; for a missing member, the enclosing object.")),
	Prop("ctx", FreeObject().Describe("The limit that was broken, when there is one.")),
).Named("ValidationError")

// HTTPValidationErrorSchema documents the 422 validation body (docs/api.md §7, shape 2).
var HTTPValidationErrorSchema = Object(
	Req("detail", Array(ValidationErrorSchema).MaxCount(MaxListed+1).Describe(fmt.Sprintf(
		"The errors found, in order: at most %d. When more were found, one last value_error item, "+
			"located at the root of the first error left out, says how many in ctx.omitted. "+
			"An input longer than %d bytes of JSON is echoed shortened: a string to its first %d characters and \"…\", "+
			"any other value as null.", MaxListed, MaxEchoedInput, EchoedChars))),
).Named("HTTPValidationError")
