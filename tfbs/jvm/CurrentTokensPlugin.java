package tfbs.jvm;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * Keeps a copy of the executor's current Hadoop delegation tokens beside YARN's token file.
 *
 * <p>YARN writes a container's tokens to {@code HADOOP_TOKEN_FILE_LOCATION} once, at launch.
 * When the driver logs in from a keytab, Spark obtains new tokens before the old ones expire and
 * hands them to the executor JVMs only: a Python process of the container (a TF node reading its
 * shards with hdfs-native) would keep the launch-time token and fail once it expired. This plugin
 * writes the executor's current tokens to {@value #FILE_NAME} in the same folder whenever they
 * change (checked every {@value #CHECK_SECONDS} s), replacing the file whole and readable by its
 * owner only; {@code tfbs.hadoop_conf.use_current_tokens} points the container's Python processes
 * at it, and hdfs-native reads the file again for each new connection.
 */
public class CurrentTokensPlugin implements SparkPlugin {
  /** The copy's name, in the folder of YARN's token file (tfbs/hadoop_conf.py reads the same name). */
  public static final String FILE_NAME = "tfbs-current-tokens";
  /** How often the executor's tokens are compared with the copy: a tiny fraction of any token's life. */
  public static final long CHECK_SECONDS = 5;

  @Override
  public DriverPlugin driverPlugin() {
    return null;
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Writer();
  }

  /** The executor side: a daemon thread that rewrites the copy when the tokens change. */
  static final class Writer implements ExecutorPlugin {
    private ScheduledExecutorService timer;
    private byte[] written = new byte[0];

    @Override
    public void init(PluginContext context, Map<String, String> extraConf) {
      String launched = System.getenv("HADOOP_TOKEN_FILE_LOCATION");
      if (launched == null || launched.isEmpty()) {
        return; // not a YARN container of a secure cluster: no tokens to keep current
      }
      Path target = Paths.get(launched).toAbsolutePath().resolveSibling(FILE_NAME);
      timer =
          Executors.newSingleThreadScheduledExecutor(
              runnable -> {
                Thread thread = new Thread(runnable, "tfbs-current-tokens");
                thread.setDaemon(true);
                return thread;
              });
      write(target); // before the first task, so every Python process finds the copy
      timer.scheduleWithFixedDelay(() -> write(target), CHECK_SECONDS, CHECK_SECONDS, TimeUnit.SECONDS);
    }

    private synchronized void write(Path target) {
      try {
        Credentials credentials = UserGroupInformation.getCurrentUser().getCredentials();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
          credentials.writeTokenStorageToStream(out);
        }
        byte[] current = bytes.toByteArray();
        if (Arrays.equals(current, written)) {
          return;
        }
        Path partial = target.resolveSibling(FILE_NAME + ".partial");
        Files.deleteIfExists(partial);
        Files.createFile(partial, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.write(partial, current);
        Files.move(partial, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        written = current;
        System.err.println(
            "tfbs current tokens: " + credentials.numberOfTokens() + " token(s) written to " + target);
      } catch (IOException | RuntimeException err) {
        // Never fail the executor over it: the launch-time tokens still serve until they expire.
        System.err.println("tfbs current tokens: could not write " + target + ": " + err);
      }
    }

    @Override
    public void shutdown() {
      if (timer != null) {
        timer.shutdownNow();
      }
    }
  }
}
