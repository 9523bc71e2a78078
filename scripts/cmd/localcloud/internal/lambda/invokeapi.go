package lambda

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// InvokeAPI serves Lambda's Invoke (POST
// /2015-03-31/functions/{FunctionName}/invocations?Qualifier=…) for the
// functions' own calls — the release check invoking the version under
// release and the other functions' live aliases: the function by name or
// ARN, qualified by a version number or the alias's name (unqualified: the
// alias, localcloud's only entry); RequestResponse only. A function
// error is a 200 with X-Amz-Function-Error: Unhandled and the error
// document; X-Amz-Executed-Version names the version that ran.
// https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html
type InvokeAPI struct {
	Functions map[string]*Alias // by function name
}

func (a InvokeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/2015-03-31/functions/")
	name, ok2 := strings.CutSuffix(rest, "/invocations")
	if r.Method != http.MethodPost || !ok || !ok2 {
		invokeError(w, http.StatusNotFound, "UnknownOperationException", "localcloud's Lambda API serves Invoke only")
		return
	}
	qualifier := r.URL.Query().Get("Qualifier")
	if i := strings.LastIndex(name, ":function:"); i >= 0 { // an ARN, maybe qualified
		name = name[i+len(":function:"):]
	}
	if fn, q, found := strings.Cut(name, ":"); found {
		name, qualifier = fn, q
	}
	alias := a.Functions[name]
	if alias == nil {
		invokeError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name)
		return
	}
	if t := r.Header.Get("X-Amz-Invocation-Type"); t != "" && t != "RequestResponse" {
		invokeError(w, http.StatusBadRequest, "InvalidParameterValueException", "localcloud's Invoke is RequestResponse only")
		return
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, MaxSyncPayload+1))
	if err != nil || len(payload) > MaxSyncPayload {
		invokeError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "Request must be smaller than 6291456 bytes for the InvokeFunction operation")
		return
	}
	invoke, version := alias.Invoke, ""
	switch {
	case qualifier == "" || qualifier == alias.AliasName:
	default:
		v := alias.Version(qualifier)
		if v == nil {
			invokeError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+alias.ARN()[:strings.LastIndexByte(alias.ARN(), ':')]+":"+qualifier)
			return
		}
		invoke, version = v.Invoke, qualifier
	}
	wait := time.Duration(0) // a slot, as the caller's time allows; at once under a reservation
	if alias.Reserved() > 0 {
		wait = NoWait
	}
	o, _, err := invoke(r.Context(), payload, wait)
	switch {
	case errors.Is(err, ErrThrottled):
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", "TooManyRequestsException")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(map[string]string{"Reason": "ReservedFunctionConcurrentInvocationLimitExceeded", "Type": "User", "message": "Rate Exceeded."})
		return
	case err != nil:
		invokeError(w, http.StatusInternalServerError, "ServiceException", err.Error())
		return
	}
	if version == "" {
		version, _, _ = alias.Routing()
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amz-Executed-Version", version)
	if o.Status != "ok" {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
	}
	_, _ = w.Write(o.Body)
}

func invokeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
}
