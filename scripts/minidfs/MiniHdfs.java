// The HDFS test cluster: Apache Hadoop's MiniDFSCluster with one NameNode and one DataNode
// on 127.0.0.1, its data under a directory of the caller's. Started and stopped (SIGTERM,
// by PID) by scripts/engines.sh.
//
//   java -cp CLASSPATH MiniHdfs DATA_DIR NAMENODE_PORT
//
// Prints "Ready! hdfs://127.0.0.1:PORT" once the DataNode has registered.

import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

public class MiniHdfs {
    public static void main(String[] args) throws Exception {
        File base = new File(args[0]);
        int port = Integer.parseInt(args[1]);
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getAbsolutePath());
        conf.set("dfs.replication", "1");
        // Loopback only: the NameNode's RPC, its web UI and the DataNode's ports.
        conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
        conf.set("dfs.namenode.http-address", "127.0.0.1:0");
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
            .nameNodePort(port)
            .nameNodeHttpPort(0)
            .numDataNodes(1)
            .build();
        cluster.waitActive();
        Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown));
        System.out.println("Ready! hdfs://127.0.0.1:" + cluster.getNameNodePort());
        System.out.flush();
        Thread.currentThread().join();
    }
}
