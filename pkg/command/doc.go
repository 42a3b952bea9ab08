// Package command is customapi's command tree as a library: one call in a
// program's main gives it `serve`, `backup`, `restore`, `storage rewrite`
// and `migrate`, `etcd defrag`, `kubeconfig` and `version` for the
// program's own resources, with the flags and help of `customapi`'s commands (and
// `backup` / `restore` of its data dir). It follows sample-apiserver's NewCommandStartWardleServer: the program keeps
// its main, the library keeps the commands.
//
//	func main() {
//		command.Main(command.Config{
//			Name:      "widgets-server",
//			Resources: []resource.Resource{widgets.Widgets},
//		})
//	}
//
// Then, with the program built as widgets-server:
//
//	widgets-server serve --data-dir widgets-data          # HTTPS API, embedded etcd
//	widgets-server backup --data-dir widgets-data -o b.tar # online, while it serves
//	widgets-server restore --data-dir restored b.tar       # offline, into a new data dir
//	widgets-server storage rewrite --data-dir widgets-data # re-encode stored objects
//	widgets-server etcd defrag --data-dir widgets-data     # reclaim etcd's space, clear a full quota
//	widgets-server kubeconfig --user alice -o alice.kubeconfig
//	widgets-server version
//
// NewRootCommand returns the cobra command instead of running it, for a
// program that adds commands of its own (customapi adds `bench`).
package command
