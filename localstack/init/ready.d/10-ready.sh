#!/bin/bash
# Runs inside LocalStack once it is ready; `make local-up` waits for it
# through /_localstack/init/ready. The stack itself is deployed by
# `make local-deploy` (cdklocal), not here, so that it is the same CDK app
# the platform team deploys.
set -euo pipefail
echo "practice-api: LocalStack ready for cdklocal bootstrap && cdklocal deploy"
