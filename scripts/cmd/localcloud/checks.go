package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/iam"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
)

// checkArch refuses bootstraps this machine cannot run.
func checkArch(st *stack.Stack) error {
	want := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[runtime.GOARCH]
	for _, f := range st.Functions {
		if f.Arch != want {
			return fmt.Errorf("function %s is built for %s and this machine runs %s: synthesize with -c lambdaArch=%s", f.Name, f.Arch, want, runtime.GOARCH)
		}
		if _, err := os.Stat(f.Bootstrap); err != nil {
			return fmt.Errorf("function %s: its bootstrap is missing from the cloud assembly: %w", f.Name, err)
		}
	}
	return nil
}

// checkSourcePermissions asks of each function's role what Lambda needs to
// create its event sources and destinations (and refuses, as
// CloudFormation's create would fail, when it lacks them): reading the
// stream, receiving and deleting the queue's messages, sending to an
// on-failure destination.
func checkSourcePermissions(st *stack.Stack, res *stack.Resolver, pol *iam.Policies) error {
	name := func(id string) string {
		if f := st.Functions[id]; f != nil {
			return f.Name
		}
		return "" // not a function of the template: not checked
	}
	for _, m := range st.StreamMappings {
		if err := pol.Require(name(m.Function), res.StreamArn, "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"); err != nil {
			return err
		}
		if m.OnFailure != "" {
			if err := pol.Require(name(m.Function), res.Queues[m.OnFailure].ARN, "sqs:SendMessage"); err != nil {
				return err
			}
		}
	}
	for _, m := range st.QueueMappings {
		if err := pol.Require(name(m.Function), res.Queues[m.Queue].ARN, "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"); err != nil {
			return err
		}
	}
	for fn, c := range st.AsyncConfigs {
		if c.OnFailure != "" {
			if err := pol.Require(name(fn), res.Queues[c.OnFailure].ARN, "sqs:SendMessage"); err != nil {
				return err
			}
		}
	}
	return nil
}
