package tfbs.jvm;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
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
 * owner only; {@code tfbs.storage.hadoop_conf.use_current_tokens} points the container's Python processes
 * at it, and hdfs-native reads the file again for each new connection.
 *
 * <p>Spark sends new tokens to the executors registered when it obtains them: an executor that
 * fetched its configuration (with the tokens about to be replaced) just before, and registered
 * just after, misses them and keeps tokens that expire before the next renewal (measured on the
 * cluster of hosts: a TF node's token expired 20 s after its executor started). So at each check
 * the executor also asks the driver for its current tokens and adds them to its own.
 */
public class CurrentTokensPlugin implements SparkPlugin {
  /** The copy's name, in the folder of YARN's token file (tfbs/storage/hadoop_conf.py reads the same name). */
  public static final String FILE_NAME = "tfbs-current-tokens";
  /** How often the executor's tokens are compared with the copy: a tiny fraction of any token's life. */
  public static final long CHECK_SECONDS = 5;

  /** What an executor sends to ask the driver for its current tokens. */
  static final String ASK = "tfbs-current-tokens";

  @Override
  public DriverPlugin driverPlugin() {
    return new Keeper();
  }

  /** The driver side: answers an executor's ask with the driver's current tokens. */
  static final class Keeper implements DriverPlugin {
    @Override
    public Object receive(Object message) throws Exception {
      return ASK.equals(message) ? serialized(UserGroupInformation.getCurrentUser().getCredentials()) : null;
    }
  }

  /** {@code credentials} in Hadoop's token storage format, as YARN writes a container's token file. */
  static byte[] serialized(Credentials credentials) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      credentials.writeTokenStorageToStream(out);
    }
    return bytes.toByteArray();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Writer();
  }

  /** The executor side: a daemon thread that rewrites the copy when the tokens change. */
  static final class Writer implements ExecutorPlugin {
    private ScheduledExecutorService timer;
    private PluginContext context;
    private byte[] written = new byte[0];
    private boolean askFailed;

    @Override
    public void init(PluginContext context, Map<String, String> extraConf) {
      String launched = System.getenv("HADOOP_TOKEN_FILE_LOCATION");
      if (launched == null || launched.isEmpty()) {
        return; // not a YARN container of a secure cluster: no tokens to keep current
      }
      this.context = context;
      Path target = Paths.get(launched).toAbsolutePath().resolveSibling(FILE_NAME);
      timer =
          Executors.newSingleThreadScheduledExecutor(
              runnable -> {
                Thread thread = new Thread(runnable, "tfbs-current-tokens");
                thread.setDaemon(true);
                return thread;
              });
      write(target); // before the first task, so every Python process finds the copy
      timer.scheduleWithFixedDelay(
          () -> {
            askDriver();
            write(target);
          },
          CHECK_SECONDS,
          CHECK_SECONDS,
          TimeUnit.SECONDS);
    }

    /** Adds the driver's current tokens to this executor's (a token of the same service is replaced). */
    private void askDriver() {
      try {
        Object reply = context.ask(ASK);
        if (reply instanceof byte[] bytes) {
          Credentials fromDriver = new Credentials();
          try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            fromDriver.readTokenStorageStream(in);
          }
          UserGroupInformation.getCurrentUser().addCredentials(fromDriver);
        }
        askFailed = false;
      } catch (Exception err) {
        if (!askFailed) { // once per outage, not every 5 s
          System.err.println("tfbs current tokens: could not ask the driver for its tokens: " + err);
        }
        askFailed = true;
      }
    }

    private synchronized void write(Path target) {
      try {
        Credentials credentials = UserGroupInformation.getCurrentUser().getCredentials();
        byte[] current = serialized(credentials);
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
