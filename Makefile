# Practice API. `make run` and `make test` are all a newcomer needs.
SHELL := /bin/bash
GO ?= $(shell command -v go || echo /usr/local/go/bin/go)
FUNCTIONS := $(notdir $(wildcard functions/*))
LAMBDA_OUT := .bin/lambda

.PHONY: run test check unit e2e bench build clean

## run: the API on http://127.0.0.1:8080/api/v1 with a demo key and the embedded store
run:
	scripts/devserver

## test: formatting, vet, tidy, then every test (unit, API, end-to-end)
test: check
	$(GO) test -count=1 -timeout 15m ./...

check:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /scripts/e2e)

## e2e: the black-box suite; E2E_BASE_URL/E2E_DYNAMODB_ENDPOINT/E2E_TABLE_NAME aim it at a running stage
e2e:
	$(GO) test -count=1 -v ./scripts/e2e/...

## bench: Go benchmarks against the embedded store
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./... | tee bench.txt

## build: one arm64 bootstrap per Lambda under .bin/lambda/<function>/
build: $(addprefix $(LAMBDA_OUT)/,$(addsuffix /bootstrap,$(FUNCTIONS)))

$(LAMBDA_OUT)/%/bootstrap: FORCE
	@mkdir -p $(dir $@)
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -tags lambda.norpc -ldflags "-s -w" -o $@ ./functions/$*

.PHONY: FORCE
FORCE:

clean:
	rm -rf .bin cdk.out bench.txt
