package apischema

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// This file reads the markers after a field's type (`default=1 minimum=1
// description="..."`) and applies them to its schema.

// marker is one key=value after the |.
type marker struct {
	key, value string
}

// markerNames are the markers a field may carry.
var markerNames = []string{
	"required", "default", "description", "enum", "minimum", "maximum",
	"pattern", "minLength", "maxLength", "format",
	"minItems", "maxItems", "uniqueItems", "listType", "listMapKey",
	"minProperties", "maxProperties",
	"immutable", "validation", "message",
}

// formats are the string formats the API server knows.
var formats = []string{"byte", "date", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uri", "uuid", "password"}

// parseMarkers splits the text after | into markers: key=value separated by spaces (or
// further |), a value in double quotes when it holds spaces (\" and \\ escape), or in
// single quotes (no escapes), as a JSON default with double quotes in it may be.
func parseMarkers(text string) ([]marker, error) {
	var out []marker
	rs := []rune(text)
	for i := 0; i < len(rs); {
		if rs[i] == ' ' || rs[i] == '\t' || rs[i] == '|' {
			i++
			continue
		}
		start := i
		for i < len(rs) && rs[i] != '=' && rs[i] != ' ' && rs[i] != '\t' && rs[i] != '|' {
			i++
		}
		key := string(rs[start:i])
		if i >= len(rs) || rs[i] != '=' {
			return nil, fmt.Errorf("marker %q has no value: write %s=VALUE", key, key)
		}
		i++ // =
		var value strings.Builder
		if i < len(rs) && rs[i] == '\'' {
			end := strings.IndexRune(string(rs[i+1:]), '\'')
			if end < 0 {
				return nil, fmt.Errorf("marker %s: the quoted value has no closing '", key)
			}
			inner := []rune(string(rs[i+1:])[:end])
			value.WriteString(string(inner))
			i += len(inner) + 2
		} else if i < len(rs) && rs[i] == '"' {
			i++
			closed := false
			for i < len(rs) {
				switch {
				case rs[i] == '\\' && i+1 < len(rs) && (rs[i+1] == '"' || rs[i+1] == '\\'):
					value.WriteRune(rs[i+1])
					i += 2
					continue
				case rs[i] == '"':
					closed = true
				default:
					value.WriteRune(rs[i])
					i++
					continue
				}
				break
			}
			if !closed {
				return nil, fmt.Errorf("marker %s: the quoted value has no closing \"", key)
			}
			i++ // closing quote
		} else {
			for i < len(rs) && rs[i] != ' ' && rs[i] != '\t' {
				value.WriteRune(rs[i])
				i++
			}
		}
		out = append(out, marker{key: key, value: value.String()})
	}
	return out, nil
}

// apply sets the markers on the field's schema s and says whether the field is
// required. Each problem names the marker.
func (p *parser) apply(s *apiextensionsv1.JSONSchemaProps, ms []marker, at Path, sc scope) bool {
	seen := map[string]bool{}
	required := false
	var rule *apiextensionsv1.ValidationRule
	message := ""
	var listMapKeys []string
	for _, m := range ms {
		fail := func(msg string) { p.fail(at, fmt.Sprintf("marker %s=%s: %s", m.key, m.value, msg)) }
		if !slices.Contains(markerNames, m.key) {
			p.fail(at, fmt.Sprintf("unknown marker %q%s; markers are %s", m.key, closest(m.key, markerNames), strings.Join(markerNames, ", ")))
			continue
		}
		if seen[m.key] && m.key != "listMapKey" {
			fail("given twice")
			continue
		}
		seen[m.key] = true
		var err error
		switch m.key {
		case "required":
			required, err = boolValue(m.value)
			if err == nil && required && sc.status {
				err = errors.New("status fields cannot be required: the controller writes them as the children come")
			}
		case "description":
			s.Description = m.value
		case "default":
			err = p.setDefault(s, m.value)
		case "enum":
			err = setEnum(s, m.value)
		case "minimum", "maximum":
			err = setBound(s, m.key, m.value)
		case "pattern":
			err = onType(s, "a string", "string")
			if err == nil {
				if _, rerr := regexp.Compile(m.value); rerr != nil {
					err = fmt.Errorf("not a regular expression: %v", rerr)
				}
				s.Pattern = m.value
			}
		case "format":
			err = onType(s, "a string", "string")
			if err == nil && !slices.Contains(formats, m.value) {
				err = fmt.Errorf("unknown format; use one of %s", strings.Join(formats, ", "))
			}
			s.Format = m.value
		case "minLength", "maxLength":
			err = setCount(s, m.key, m.value, "a string", "string")
		case "minItems", "maxItems":
			err = setCount(s, m.key, m.value, "a list", "array")
		case "minProperties", "maxProperties":
			err = setCount(s, m.key, m.value, "a map", "object")
		case "uniqueItems":
			err = setUnique(s, m.value)
		case "listType":
			err = onType(s, "a list", "array")
			if err == nil {
				if !slices.Contains([]string{"atomic", "set", "map"}, m.value) {
					err = errors.New("must be atomic, set or map")
				}
				v := m.value
				s.XListType = &v
			}
		case "listMapKey":
			listMapKeys = append(listMapKeys, m.value)
		case "immutable":
			var on bool
			if on, err = boolValue(m.value); err == nil && on {
				if sc.inList {
					err = errors.New("a field inside a list cannot be immutable (the API server cannot tell an item's old value), unless the list has listType=map")
				} else {
					s.XValidations = append(s.XValidations, apiextensionsv1.ValidationRule{Rule: "self == oldSelf", Message: sc.name + " is immutable"})
				}
			}
		case "validation":
			rule = &apiextensionsv1.ValidationRule{Rule: m.value}
		case "message":
			message = m.value
		}
		if err != nil {
			fail(err.Error())
		}
	}
	if message != "" && rule == nil {
		p.fail(at, "marker message= goes with validation=, the rule whose message it is")
	}
	if rule != nil {
		rule.Message = message
		s.XValidations = append(s.XValidations, *rule)
	}
	if len(listMapKeys) > 0 || (s.XListType != nil && *s.XListType == "map") {
		p.listMap(s, listMapKeys, at)
	}
	if s.XListType != nil && *s.XListType == "set" && !scalarItems(s) {
		p.fail(at, "listType=set (or uniqueItems=true) needs items of a scalar type; for objects use listType=map with listMapKey")
	}
	if s.Default != nil {
		p.checkDefault(s, at)
	}
	return required
}

// listMap checks listType=map and its keys.
func (p *parser) listMap(s *apiextensionsv1.JSONSchemaProps, keys []string, at Path) {
	switch {
	case s.XListType == nil || *s.XListType != "map":
		p.fail(at, "marker listMapKey needs listType=map")
		return
	case len(keys) == 0:
		p.fail(at, "listType=map needs listMapKey=FIELD, the field of the items that tells them apart")
		return
	case s.Items == nil || s.Items.Schema == nil || len(s.Items.Schema.Properties) == 0:
		p.fail(at, "listType=map needs items that are objects with fields")
		return
	}
	items := s.Items.Schema
	for _, k := range keys {
		prop, ok := items.Properties[k]
		switch {
		case !ok:
			p.fail(at, fmt.Sprintf("listMapKey=%s: the items have no field %s", k, k))
		case !slices.Contains(items.Required, k) && prop.Default == nil:
			p.fail(at, fmt.Sprintf("listMapKey=%s: the key field must be required or have a default", k))
		case prop.Type != "string" && prop.Type != "integer" && prop.Type != "boolean":
			p.fail(at, fmt.Sprintf("listMapKey=%s: a key must be a string, integer or boolean", k))
		}
	}
	s.XListMapKeys = keys
}

func scalarItems(s *apiextensionsv1.JSONSchemaProps) bool {
	if s.Items == nil || s.Items.Schema == nil {
		return false
	}
	switch s.Items.Schema.Type {
	case "string", "integer", "number", "boolean":
		return true
	}
	return false
}

func boolValue(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("must be true or false")
}

// onType fails unless s is of one of the types.
func onType(s *apiextensionsv1.JSONSchemaProps, what string, types ...string) error {
	if slices.Contains(types, s.Type) && (s.Type != "object" || s.AdditionalProperties != nil) {
		return nil
	}
	return fmt.Errorf("only for %s, and this field is %s", what, typeName(s))
}

// typeName names a schema's type as a field declares it.
func typeName(s *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return "[]" + typeName(s.Items.Schema)
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return "map[string]" + typeName(s.AdditionalProperties.Schema)
	case s.Type == "object" && len(s.Properties) > 0:
		return "an object"
	}
	return s.Type
}

// scalar parses a marker's value as a value of the field's type.
func scalar(s *apiextensionsv1.JSONSchemaProps, v string) (any, error) {
	switch s.Type {
	case "string":
		return v, nil
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", v)
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", v)
		}
		return f, nil
	case "boolean":
		return boolValue(v)
	}
	var out any
	if err := utiljson.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("a default of %s is written in JSON, such as %s", typeName(s), jsonExample(s))
	}
	return out, nil
}

func jsonExample(s *apiextensionsv1.JSONSchemaProps) string {
	if s.Type == "array" {
		return `default=["a","b"]`
	}
	return `default={"key":"value"}`
}

func (p *parser) setDefault(s *apiextensionsv1.JSONSchemaProps, v string) error {
	value, err := scalar(s, v)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return err
	}
	s.Default = &apiextensionsv1.JSON{Raw: raw}
	return nil
}

func setEnum(s *apiextensionsv1.JSONSchemaProps, v string) error {
	if err := onType(s, "a string, integer or number", "string", "integer", "number"); err != nil {
		return err
	}
	for _, item := range strings.Split(v, ",") {
		value, err := scalar(s, strings.TrimSpace(item))
		if err != nil {
			return err
		}
		raw, _ := json.Marshal(value)
		s.Enum = append(s.Enum, apiextensionsv1.JSON{Raw: raw})
	}
	return nil
}

func setBound(s *apiextensionsv1.JSONSchemaProps, key, v string) error {
	if err := onType(s, "an integer or a number", "integer", "number"); err != nil {
		return err
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || (s.Type == "integer" && f != float64(int64(f))) {
		return fmt.Errorf("%q is not %s", v, map[bool]string{true: "an integer", false: "a number"}[s.Type == "integer"])
	}
	if key == "minimum" {
		s.Minimum = &f
	} else {
		s.Maximum = &f
	}
	if s.Minimum != nil && s.Maximum != nil && *s.Minimum > *s.Maximum {
		return errors.New("minimum is more than maximum")
	}
	return nil
}

func setCount(s *apiextensionsv1.JSONSchemaProps, key, v, what string, types ...string) error {
	if err := onType(s, what, types...); err != nil {
		return err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a count (an integer of 0 or more)", v)
	}
	switch key {
	case "minLength":
		s.MinLength = &n
	case "maxLength":
		s.MaxLength = &n
	case "minItems":
		s.MinItems = &n
	case "maxItems":
		s.MaxItems = &n
	case "minProperties":
		s.MinProperties = &n
	case "maxProperties":
		s.MaxProperties = &n
	}
	for _, pair := range [][2]*int64{{s.MinLength, s.MaxLength}, {s.MinItems, s.MaxItems}, {s.MinProperties, s.MaxProperties}} {
		if pair[0] != nil && pair[1] != nil && *pair[0] > *pair[1] {
			return errors.New("the minimum is more than the maximum")
		}
	}
	return nil
}

// setUnique turns uniqueItems=true into listType=set: the API server refuses
// uniqueItems (checking it costs the square of the list's length) and checks a set's
// items are unique instead.
func setUnique(s *apiextensionsv1.JSONSchemaProps, v string) error {
	if err := onType(s, "a list", "array"); err != nil {
		return err
	}
	on, err := boolValue(v)
	if err != nil || !on {
		return err
	}
	set := "set"
	s.XListType = &set
	return nil
}
