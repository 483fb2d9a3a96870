package org.apache.flink.runtime.scheduler;

import org.apache.flink.runtime.util.EnvironmentInformation;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * What this jar was built for. The extension reaches into Flink internals (see scheduler/README.md), so it runs only
 * on the exact Flink version whose jars it was compiled against; {@link #checkVersion} refuses any other.
 */
final class PlacementSchedulerBuild {
    static final String BUILD_INFO = "placement-scheduler.properties";
    static final String ACTIVE_LOG_LINE = "placement scheduler extension active";

    final String flinkVersion;
    final String digest;

    private PlacementSchedulerBuild(String flinkVersion, String digest) {
        this.flinkVersion = flinkVersion;
        this.digest = digest;
    }

    private static volatile PlacementSchedulerBuild loaded;

    static PlacementSchedulerBuild get() {
        if (loaded == null) {
            Properties props = new Properties();
            try (InputStream in = PlacementSchedulerBuild.class.getResourceAsStream(BUILD_INFO)) {
                if (in != null) {
                    props.load(in);
                }
            } catch (IOException e) {
                // treated as unknown below
            }
            loaded = new PlacementSchedulerBuild(
                    props.getProperty("flink.version", "unknown"), props.getProperty("build.digest", "unknown"));
        }
        return loaded;
    }

    /** Throws unless the running Flink is the version this jar was built for. */
    void checkVersion() {
        String running = EnvironmentInformation.getVersion();
        if (!flinkVersion.equals(running)) {
            throw new PlacementSchedulerException("this scheduler extension (build " + digest + ") was built for Flink "
                    + flinkVersion + " but runs on Flink " + running + "; it relies on Flink internals and refuses to run:"
                    + " rebuild and reinstall it for this installation (placement scheduler install --flink-home <dir>)"
                    + ", or remove it from lib/");
        }
    }

    String describe() {
        return "Flink " + flinkVersion + ", build " + digest;
    }
}
