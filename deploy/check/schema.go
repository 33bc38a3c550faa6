package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// checkValuesSchema wants values.schema.json strict (every object schema
// that lists properties refuses others) and every key of values.yaml and
// of the CI values files to be in it, so a value cannot be added, or
// misspelt by a user, without the schema knowing. helm lint --strict
// validates the values against the schema itself.
func checkValuesSchema(chart string) error {
	raw, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		return err
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return fmt.Errorf("values.schema.json: %w", err)
	}
	errs := strictSchema("values", schema)
	files, _ := filepath.Glob(filepath.Join(chart, "ci", "*.yaml"))
	for _, f := range append([]string{filepath.Join(chart, "values.yaml")}, files...) {
		var values map[string]any
		if err := readYAML(f, &values); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range keysInSchema("", values, schema) {
			errs = append(errs, fmt.Errorf("%s: %w", f, e))
		}
	}
	return errors.Join(errs...)
}

// strictSchema finds object schemas that list properties but accept others.
func strictSchema(path string, s map[string]any) []error {
	var errs []error
	props, _ := s["properties"].(map[string]any)
	if len(props) > 0 && s["additionalProperties"] != false {
		errs = append(errs, fmt.Errorf("values.schema.json: %s lists properties but does not set additionalProperties: false", path))
	}
	for _, k := range sortedKeys(props) {
		if child, ok := props[k].(map[string]any); ok {
			errs = append(errs, strictSchema(path+"."+k, child)...)
		}
	}
	return errs
}

// keysInSchema walks a values document along the schema: a key must be a
// listed property, or fall under an additionalProperties schema, or sit in
// an object the schema leaves free (no properties listed).
func keysInSchema(path string, v any, s map[string]any) []error {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	props, _ := s["properties"].(map[string]any)
	var errs []error
	for _, k := range sortedKeys(m) {
		where := path + "." + k
		if child, ok := props[k].(map[string]any); ok {
			errs = append(errs, keysInSchema(where, m[k], child)...)
			continue
		}
		switch addl := s["additionalProperties"].(type) {
		case map[string]any:
			errs = append(errs, keysInSchema(where, m[k], addl)...)
		case bool:
			if !addl {
				errs = append(errs, fmt.Errorf("%s is not in values.schema.json", where[1:]))
			}
		default:
			if len(props) > 0 {
				errs = append(errs, fmt.Errorf("%s is not in values.schema.json", where[1:]))
			}
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
