// A ConfigMap's life through registry-svc, from Go: create, get, list, watch, delete.
//
// The stubs are generated from the repository's protos with protoc-gen-go and
// protoc-gen-go-grpc; their import paths are the protos' go_package options
// (kubestore.io/gen/go/...). examples/clients/run.sh generates, builds and runs this.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	corev1 "kubestore.io/gen/go/core/v1"
	metav1 "kubestore.io/gen/go/meta/v1"
)

func main() {
	address := "127.0.0.1:50052"
	if len(os.Args) > 1 {
		address = os.Args[1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Plaintext, as the local stack serves; with TLS use grpc.WithTransportCredentials.
	conn, err := grpc.DialContext(ctx, address, grpc.WithInsecure())
	if err != nil {
		log.Fatalf("dial %s: %v", address, err)
	}
	defer conn.Close()
	cms := corev1.NewConfigMapsClient(conn)
	name := fmt.Sprintf("example-go-%d", os.Getpid())

	created, err := cms.Create(ctx, &corev1.CreateConfigMapRequest{
		Namespace: "default",
		ConfigMap: &corev1.ConfigMap{
			Metadata: &metav1.ObjectMeta{Name: name, Labels: map[string]string{"example": "go"}},
			Data:     map[string]string{"greeting": "hello"},
		},
	})
	if err != nil {
		log.Fatalf("create: %v", err)
	}
	rv := created.GetMetadata().GetResourceVersion()
	fmt.Printf("created %s at resourceVersion %s, uid %s\n", name, rv, created.GetMetadata().GetUid())

	got, err := cms.Get(ctx, &corev1.GetConfigMapRequest{Namespace: "default", Name: name})
	if err != nil || got.GetData()["greeting"] != "hello" {
		log.Fatalf("get: %v %v", got, err)
	}

	listed, err := cms.List(ctx, &corev1.ListConfigMapsRequest{
		Namespace: "default",
		Options:   &metav1.ListOptions{LabelSelector: "example=go"},
	})
	if err != nil {
		log.Fatalf("list: %v", err)
	}
	found := false
	for _, item := range listed.GetItems() {
		found = found || item.GetMetadata().GetName() == name
	}
	if !found {
		log.Fatalf("list: %s missing", name)
	}
	fmt.Printf("listed %d with example=go at %s\n", len(listed.GetItems()), listed.GetMetadata().GetResourceVersion())

	// Watch from the creation's resourceVersion: every change after it, the delete included.
	watch, err := cms.Watch(ctx, &corev1.WatchConfigMapsRequest{
		Namespace: "default",
		Options:   &metav1.ListOptions{ResourceVersion: rv, FieldSelector: "metadata.name=" + name},
	})
	if err != nil {
		log.Fatalf("watch: %v", err)
	}
	deleted, err := cms.Delete(ctx, &corev1.DeleteConfigMapRequest{Namespace: "default", Name: name})
	if err != nil || !deleted.GetDeleted() {
		log.Fatalf("delete: %v %v", deleted, err)
	}
	for {
		event, err := watch.Recv()
		if err != nil {
			log.Fatalf("watch: %v", err)
		}
		fmt.Printf("watch: %s %s\n", event.GetType(), event.GetObject().GetMetadata().GetName())
		if event.GetType() == metav1.WatchEventType_DELETED {
			break
		}
	}

	_, err = cms.Get(ctx, &corev1.GetConfigMapRequest{Namespace: "default", Name: name})
	if status.Code(err) != codes.NotFound {
		log.Fatalf("get after delete: want NotFound, got %v", err)
	}
	fmt.Printf("get after delete: NOT_FOUND: %s\n", status.Convert(err).Message())
	fmt.Println("go client: ok")
}
