package local.tfbs.hadoop;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FsConstants;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.local.LocalConfigKeys;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system for {@code FileContext} ({@code fs.AbstractFileSystem.file.impl}),
 * with permissions set by a {@code chmod} system call from the JVM, as Hadoop's native library
 * sets them on a real cluster.
 *
 * <p>Maven Central ships no native library, and without it {@code RawLocalFileSystem} starts a
 * {@code chmod} process for every permission it sets. A NodeManager localising the YARN archive
 * sets one on each of its 26,000 files and folders: about 2 ms of CPU each, a minute and a
 * half per node. {@code java.nio} makes the same call in the JVM. Permissions with a sticky or
 * set-id bit, which {@code java.nio} cannot set, still go through Hadoop's own path.
 */
public class NioLocalFs extends ChecksumFs {

  public NioLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(new Raw(uri, conf));
  }

  public NioLocalFs(Configuration conf) throws IOException, URISyntaxException {
    this(FsConstants.LOCAL_FS_URI, conf);
  }

  /** {@code RawLocalFileSystem} with the permission bits set in the JVM. */
  public static class RawFileSystem extends RawLocalFileSystem {
    /** The nine permission bits from the owner's read (0400) to the others' execute (0001). */
    private static final PosixFilePermission[] BITS = {
      PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE,
      PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE,
    };

    @Override
    public void setPermission(Path path, FsPermission permission) throws IOException {
      short mode = permission.toShort();
      if ((mode & ~0777) != 0) {
        super.setPermission(path, permission);
        return;
      }
      Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
      for (int bit = 0; bit < BITS.length; bit++) {
        if ((mode & (0400 >> bit)) != 0) {
          set.add(BITS[bit]);
        }
      }
      Files.setPosixFilePermissions(pathToFile(path).toPath(), set);
    }
  }

  /** What {@code org.apache.hadoop.fs.local.RawLocalFs} is, over {@link RawFileSystem}. */
  static final class Raw extends DelegateToFileSystem {
    Raw(URI uri, Configuration conf) throws IOException, URISyntaxException {
      super(uri, new RawFileSystem(), conf, FsConstants.LOCAL_FS_URI.getScheme(), false);
    }

    @Override
    public int getUriDefaultPort() {
      return -1; // file:/// has no port
    }

    @Override
    @Deprecated
    public FsServerDefaults getServerDefaults() throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public FsServerDefaults getServerDefaults(Path path) throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public boolean isValidName(String src) {
      return true; // any local path
    }
  }
}
