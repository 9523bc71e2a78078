// Command openapi-coverage reports which documented answers (operation and
// status) a test run produced, from the lines shared/openapi/conformance
// appends to $OPENAPI_COVERAGE. `make openapi-coverage` runs every test
// with it.
//
//	openapi-coverage <tally file>
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/practice-api/practice-api/shared/openapi"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: openapi-coverage <tally file>")
		os.Exit(2)
	}
	seen, err := readTally(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapi-coverage:", err)
		os.Exit(1)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string                     `json:"operationId"`
			Responses   map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		fmt.Fprintln(os.Stderr, "openapi-coverage:", err)
		os.Exit(1)
	}
	var rows []string
	documented, hit := 0, 0
	for _, item := range doc.Paths {
		for _, op := range item {
			for status := range op.Responses {
				key := op.OperationID + " " + status
				documented++
				n := seen[key]
				delete(seen, key)
				if n > 0 {
					hit++
				}
				rows = append(rows, fmt.Sprintf("%-28s %s %6d", op.OperationID, status, n))
			}
		}
	}
	slices.Sort(rows)
	for _, r := range rows {
		fmt.Println(r)
	}
	fmt.Printf("\n%d of %d documented answers (operation, status) were produced by the tests\n", hit, documented)
	for key, n := range seen {
		fmt.Printf("undocumented answer seen %d times: %s\n", n, key)
	}
}

func readTally(name string) (map[string]int, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			seen[line]++
		}
	}
	return seen, sc.Err()
}
