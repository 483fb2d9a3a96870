package org.apache.flink.runtime.scheduler;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Where a job's schedulercfg is: {@code placement.scheduler.file} in the job's own configuration, else
 * {@code <placement.scheduler.dir>/<job name>.schedulercfg} with the dir from the job's configuration, the JVM system
 * property, or the JobManager's configuration.
 *
 * <p>The factory this extension replaces is not given the JobManager's configuration, so it is loaded the way the
 * entrypoint loaded it: from the {@code --configDir}/{@code -c} argument of this JVM (or {@code $FLINK_CONF_DIR}) plus
 * the {@code -D key=value} dynamic properties on its command line.
 */
final class PlacementSchedulerSettings {
    static final ConfigOption<String> DIR =
            ConfigOptions.key("placement.scheduler.dir").stringType().noDefaultValue()
                    .withDescription("Directory with one schedulercfg per job (<job name>.schedulercfg)");
    static final ConfigOption<String> FILE =
            ConfigOptions.key("placement.scheduler.file").stringType().noDefaultValue()
                    .withDescription("This job's schedulercfg (job configuration; overrides the dir)");

    private static volatile Configuration clusterConfig;

    private PlacementSchedulerSettings() {}

    /** The JobManager's configuration as its entrypoint loaded it (empty when it cannot be found). */
    static Configuration clusterConfiguration() {
        if (clusterConfig == null) {
            List<String> args = Arrays.asList(ProcessHandle.current().info().arguments().orElse(new String[0]));
            String confDir = System.getenv("FLINK_CONF_DIR");
            Configuration dynamic = new Configuration();
            for (int i = 0; i < args.size() - 1; i++) {
                String arg = args.get(i);
                if (arg.equals("-c") || arg.equals("--configDir")) {
                    confDir = args.get(i + 1);
                } else if (arg.equals("-D")) {
                    String[] kv = args.get(i + 1).split("=", 2);
                    if (kv.length == 2) {
                        dynamic.setString(kv[0].trim(), kv[1].trim());
                    }
                }
            }
            Configuration loaded = new Configuration();
            if (confDir != null) {
                try {
                    loaded = GlobalConfiguration.loadConfiguration(confDir, dynamic);
                } catch (RuntimeException e) {
                    loaded = dynamic;
                }
            } else {
                loaded = dynamic;
            }
            clusterConfig = loaded;
        }
        return clusterConfig;
    }

    /** The schedulercfg for a job, or empty when the job is not placed (no key set anywhere). */
    static Optional<Path> schedulercfgFor(String jobName, Configuration jobConfig) {
        Optional<String> file = jobConfig.getOptional(FILE);
        if (file.isPresent() && !file.get().trim().isEmpty()) {
            return Optional.of(Paths.get(file.get().trim()));
        }
        return schedulerDir(jobConfig).map(dir -> dir.resolve(PlacementNames.schedulercfgFilename(jobName)));
    }

    static Optional<Path> schedulerDir(Configuration jobConfig) {
        String dir = jobConfig.getOptional(DIR)
                .orElseGet(() -> System.getProperty(DIR.key(), clusterConfiguration().get(DIR)));
        return dir == null || dir.trim().isEmpty() ? Optional.empty() : Optional.of(Paths.get(dir.trim()));
    }
}
