package local.tfbs.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;

/**
 * Hadoop's NodeManager, with {@link NioLocalFs} as its local file system.
 *
 * <p>The setting lives in {@code tfbs-nodemanager.xml} beside this class, a default resource of
 * this JVM only: in the host's {@code yarn-site.xml} it would reach the containers as well, whose
 * class path lacks this class.
 */
public final class NodeManagerMain {
  private NodeManagerMain() {}

  public static void main(String[] args) throws Exception {
    Configuration.addDefaultResource("tfbs-nodemanager.xml");
    NodeManager.main(args);
  }
}
