package codedeploy

import (
	"encoding/json"
	"net/http"
	"strings"
)

// API serves the two calls of CodeDeploy's API a lifecycle hook makes
// (awsJson1_1, X-Amz-Target CodeDeploy_20141006.*): GetDeployment (the
// deployment's group, status and AppSpec content) and
// PutLifecycleEventHookExecutionStatus; any other is refused.
// https://docs.aws.amazon.com/codedeploy/latest/APIReference/API_GetDeployment.html
// https://docs.aws.amazon.com/codedeploy/latest/APIReference/API_PutLifecycleEventHookExecutionStatus.html
type API struct {
	// Deployment is a deployment by its id (nil: none).
	Deployment func(id string) *Deployment
	// Application is the deployment groups' application name.
	Application string
}

func (a API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		DeploymentID string `json:"deploymentId"`
		ExecID       string `json:"lifecycleEventHookExecutionId"`
		Status       string `json:"status"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		apiError(w, "SerializationException", err.Error())
		return
	}
	d := a.Deployment(in.DeploymentID)
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "CodeDeploy_20141006.")
	if d == nil && (op == "GetDeployment" || op == "PutLifecycleEventHookExecutionStatus") {
		apiError(w, "DeploymentDoesNotExistException", "The deployment "+in.DeploymentID+" could not be found.")
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	switch op {
	case "GetDeployment":
		status, reason := d.Status()
		info := map[string]any{"deploymentId": d.ID, "applicationName": a.Application, "deploymentGroupName": d.Group, "status": status,
			"computePlatform": "Lambda", "deploymentConfigName": d.Config, "creator": "user",
			"revision": map[string]any{"revisionType": "AppSpecContent", "appSpecContent": map[string]string{"content": d.AppSpec()}}}
		if reason != "" {
			info["errorInformation"] = map[string]string{"message": reason}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"deploymentInfo": info})
	case "PutLifecycleEventHookExecutionStatus":
		if err := d.PutHookStatus(in.ExecID, in.Status); err != nil {
			code, msg, _ := strings.Cut(err.Error(), ": ")
			apiError(w, code, msg)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"lifecycleEventHookExecutionId": in.ExecID})
	default:
		apiError(w, "UnknownOperationException", "localcloud's CodeDeploy serves GetDeployment and PutLifecycleEventHookExecutionStatus only")
	}
}

func apiError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}
