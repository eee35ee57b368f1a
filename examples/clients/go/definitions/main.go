// Every published definition of tests/fixtures/crds/ through registry-svc, from Go: create,
// get, list, delete, each schema compared with the manifest's. A definition's
// `openAPIV3Schema` travels as JSON text (see apiextensions.proto).
//
// examples/clients/run.sh generates the stubs (protoc-gen-go, protoc-gen-go-grpc), builds and
// runs this: definitions [127.0.0.1:50052] [CRD_DIR].
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	extv1 "kubestore.io/gen/go/apiextensions/v1"
)

// message is the request's definition: the manifest without apiVersion and kind, each
// version's schema as JSON text, read by protojson (json_name: openAPIV3Schema).
func message(manifest map[string]any) (*extv1.CustomResourceDefinition, error) {
	delete(manifest, "apiVersion")
	delete(manifest, "kind")
	spec, _ := manifest["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		schema, _ := v.(map[string]any)["schema"].(map[string]any)
		if schema == nil {
			continue
		}
		text, err := json.Marshal(schema["openAPIV3Schema"])
		if err != nil {
			return nil, err
		}
		schema["openAPIV3Schema"] = string(text)
	}
	body, err := json.Marshal(manifest)
	if err != nil {
		return nil, err
	}
	crd := &extv1.CustomResourceDefinition{}
	return crd, protojson.Unmarshal(body, crd)
}

func schemas(crd *extv1.CustomResourceDefinition) (map[string]any, error) {
	out := map[string]any{}
	for _, v := range crd.GetSpec().GetVersions() {
		var s any
		if err := json.Unmarshal([]byte(v.GetSchema().GetOpenApiV3Schema()), &s); err != nil {
			return nil, fmt.Errorf("version %s: %v", v.GetName(), err)
		}
		out[v.GetName()] = s
	}
	return out, nil
}

// gone waits until name is deleted (its objects' cleanup runs first).
func gone(ctx context.Context, defs extv1.CustomResourceDefinitionsClient, name string) {
	until := time.Now().Add(30 * time.Second)
	for time.Now().Before(until) {
		_, err := defs.Get(ctx, &extv1.GetCustomResourceDefinitionRequest{Name: name})
		if status.Code(err) == codes.NotFound {
			return
		}
		if err != nil {
			log.Fatalf("get %s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	log.Fatalf("%s is still there after 30 s", name)
}

func main() {
	address, dir := "127.0.0.1:50052", "tests/fixtures/crds"
	if len(os.Args) > 1 {
		address = os.Args[1]
	}
	if len(os.Args) > 2 {
		dir = os.Args[2]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := grpc.DialContext(ctx, address, grpc.WithInsecure())
	if err != nil {
		log.Fatalf("dial %s: %v", address, err)
	}
	defer conn.Close()
	defs := extv1.NewCustomResourceDefinitionsClient(conn)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		log.Fatalf("no definitions in %s: %v", dir, err)
	}
	sort.Strings(files)
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			log.Fatal(err)
		}
		var manifest map[string]any
		if err := json.Unmarshal(text, &manifest); err != nil {
			log.Fatalf("%s: %v", file, err)
		}
		want := map[string]any{}
		for _, v := range manifest["spec"].(map[string]any)["versions"].([]any) {
			v := v.(map[string]any)
			want[v["name"].(string)] = v["schema"].(map[string]any)["openAPIV3Schema"]
		}
		crd, err := message(manifest)
		if err != nil {
			log.Fatalf("%s: %v", file, err)
		}
		name := crd.GetMetadata().GetName()
		// A definition left by an interrupted run goes first.
		if _, err := defs.Delete(ctx, &extv1.DeleteCustomResourceDefinitionRequest{Name: name}); err == nil {
			gone(ctx, defs, name)
		} else if status.Code(err) != codes.NotFound {
			log.Fatalf("delete %s: %v", name, err)
		}
		created, err := defs.Create(ctx, &extv1.CreateCustomResourceDefinitionRequest{CustomResourceDefinition: crd})
		if err != nil {
			log.Fatalf("create %s: %v", name, err)
		}
		got, err := defs.Get(ctx, &extv1.GetCustomResourceDefinitionRequest{Name: name})
		if err != nil {
			log.Fatalf("get %s: %v", name, err)
		}
		for what, crd := range map[string]*extv1.CustomResourceDefinition{"created": created, "read back": got} {
			s, err := schemas(crd)
			if err != nil || !reflect.DeepEqual(s, want) {
				log.Fatalf("%s: the schema %s differs (%v)", name, what, err)
			}
		}
		listed, err := defs.List(ctx, &extv1.ListCustomResourceDefinitionsRequest{})
		if err != nil {
			log.Fatalf("list: %v", err)
		}
		found := false
		for _, d := range listed.GetItems() {
			found = found || d.GetMetadata().GetName() == name
		}
		if !found {
			log.Fatalf("%s is not listed", name)
		}
		if _, err := defs.Delete(ctx, &extv1.DeleteCustomResourceDefinitionRequest{Name: name}); err != nil {
			log.Fatalf("delete %s: %v", name, err)
		}
		gone(ctx, defs, name)
		fmt.Printf("%s: created, read back, listed and deleted\n", name)
	}
}
