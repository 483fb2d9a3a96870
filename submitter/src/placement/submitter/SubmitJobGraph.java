package placement.submitter;

import java.io.File;
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.flink.api.common.JobID;
import org.apache.flink.client.deployment.StandaloneClusterId;
import org.apache.flink.client.program.PackagedProgram;
import org.apache.flink.client.program.PackagedProgramUtils;
import org.apache.flink.client.program.rest.RestClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.SecurityOptions;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;

/**
 * Resubmit an unmodified job jar at another per-vertex parallelism, from a savepoint, over Flink's REST API.
 *
 * <p>Flink 2.x applies {@code pipeline.jobvertex-parallelism-overrides} (job vertex id -> parallelism) in the
 * Dispatcher to a submitted JobGraph only; a REST jar run ({@code POST /jars/<id>/run}) submits a StreamGraph and the
 * option is ignored there. So this compiles the job's JobGraph here, as {@code flink run} does (the user's main runs
 * in Flink's plan-extraction environment), with the overrides in the job's configuration and the savepoint in its
 * restore settings, and submits it with Flink's {@link RestClusterClient} (the jar travels to the blob server).
 *
 * <p>Usage (see submitter/README.md):
 *
 * <pre>
 * SubmitJobGraph --rest-url URL --jar JOB.jar [--entry-class CLASS] [--conf-dir DIR]
 *                [--parallelism-overrides ID:P,ID:P] [--savepoint PATH] [--allow-non-restored-state]
 *                [--timeout-s N] [-- PROGRAM ARGS...]
 * </pre>
 *
 * <p>Prints {@code JOBID <id>} on success. Any failure: one line {@code error: ...} on stderr, exit 1 (2: bad usage).
 */
public final class SubmitJobGraph {
    static final String LOG_CONFIG = "placement/submitter/log4j2.properties";

    private SubmitJobGraph() {}

    /** The parsed command line. */
    static final class Options {
        URI restUrl;
        File jar;
        String entryClass;
        String confDir;
        Map<String, Integer> overrides = new LinkedHashMap<>();
        String savepoint;
        boolean allowNonRestoredState;
        long timeoutS = 300;
        List<String> programArgs = new ArrayList<>();
    }

    /** A usage error (exit 2). */
    static final class UsageException extends Exception {
        UsageException(String message) {
            super(message);
        }
    }

    public static void main(String[] args) {
        if (System.getProperty("log4j.configurationFile") == null && System.getProperty("log4j2.configurationFile") == null) {
            java.net.URL quiet = SubmitJobGraph.class.getClassLoader().getResource(LOG_CONFIG);
            if (quiet != null) { // the client's logging would interleave with the one line this prints
                System.setProperty("log4j2.configurationFile", quiet.toString());
            }
        }
        int code;
        try {
            Options o = parse(args);
            System.out.println("JOBID " + submit(o));
            code = 0;
        } catch (UsageException e) {
            System.err.println("error: " + e.getMessage());
            code = 2;
        } catch (Throwable e) {
            System.err.println("error: " + oneLine(e));
            code = 1;
        }
        System.out.flush();
        System.exit(code); // the REST client's threads must not keep the JVM alive
    }

    static Options parse(String[] args) throws UsageException {
        Options o = new Options();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--")) {
                o.programArgs.addAll(Arrays.asList(args).subList(i + 1, args.length));
                break;
            }
            if (a.equals("--allow-non-restored-state")) {
                o.allowNonRestoredState = true;
                continue;
            }
            if (i + 1 >= args.length) {
                throw new UsageException(a + " needs a value");
            }
            String v = args[++i];
            switch (a) {
                case "--rest-url": o.restUrl = URI.create(v); break;
                case "--jar": o.jar = new File(v); break;
                case "--entry-class": o.entryClass = v; break;
                case "--conf-dir": o.confDir = v; break;
                case "--savepoint": o.savepoint = v; break;
                case "--timeout-s": o.timeoutS = Long.parseLong(v); break;
                case "--parallelism-overrides": o.overrides.putAll(overrides(v)); break;
                default: throw new UsageException("unknown option " + a);
            }
        }
        if (o.restUrl == null || o.restUrl.getHost() == null || o.restUrl.getPort() < 0) {
            throw new UsageException("--rest-url http://HOST:PORT is required");
        }
        if (o.jar == null) {
            throw new UsageException("--jar is required");
        }
        if (!o.jar.isFile()) {
            throw new UsageException("--jar " + o.jar + ": no such file");
        }
        return o;
    }

    static Map<String, Integer> overrides(String text) throws UsageException {
        Map<String, Integer> out = new LinkedHashMap<>();
        for (String item : text.split(",")) {
            if (item.isBlank()) {
                continue;
            }
            String[] kv = item.trim().split(":");
            try {
                int p = Integer.parseInt(kv[1]);
                if (kv.length != 2 || !kv[0].matches("[0-9a-f]{32}") || p < 1) {
                    throw new NumberFormatException();
                }
                out.put(kv[0], p);
            } catch (RuntimeException e) {
                throw new UsageException("--parallelism-overrides: '" + item + "' is not <32-hex job vertex id>:<parallelism >= 1>");
            }
        }
        return out;
    }

    static String submit(Options o) throws Exception {
        // The JobManager host's own config (checkpointing, state backend, default parallelism...), as `flink run`
        // there would read it: a REST jar run compiles the job with the JobManager's configuration too.
        Configuration conf = o.confDir != null ? GlobalConfiguration.loadConfiguration(o.confDir) : new Configuration();
        conf.set(RestOptions.ADDRESS, o.restUrl.getHost());
        conf.set(RestOptions.PORT, o.restUrl.getPort());
        // A submission the JobManager refuses is not retried by the client; one that cannot reach it is, 20 times
        // 3 s apart by default: a minute before apply may roll back. A few seconds unless the config says otherwise.
        if (!conf.contains(RestOptions.RETRY_MAX_ATTEMPTS)) {
            conf.set(RestOptions.RETRY_MAX_ATTEMPTS, 4);
        }
        if (!conf.contains(RestOptions.RETRY_DELAY)) {
            // by key, as a plain number: milliseconds to 1.19's Long option and to the Duration option of 1.20+ alike
            conf.setString(RestOptions.RETRY_DELAY.key(), "1000");
        }
        if ("https".equalsIgnoreCase(o.restUrl.getScheme())) {
            conf.set(SecurityOptions.SSL_REST_ENABLED, true);
        }
        Map<String, String> overrides = new LinkedHashMap<>();
        o.overrides.forEach((id, p) -> overrides.put(id, Integer.toString(p)));
        conf.set(PipelineOptions.PARALLELISM_OVERRIDES, overrides);

        PackagedProgram.Builder builder = PackagedProgram.newBuilder()
                .setJarFile(o.jar)
                .setArguments(o.programArgs.toArray(new String[0]))
                .setConfiguration(conf);
        if (o.entryClass != null) {
            builder.setEntryPointClassName(o.entryClass);
        }
        PackagedProgram program = builder.build();
        JobGraph graph;
        try {
            graph = PackagedProgramUtils.createJobGraph(program, conf, conf.get(CoreOptions.DEFAULT_PARALLELISM), true);
        } finally {
            program.close();
        }
        checkOverrides(graph, o.overrides);
        // the Dispatcher reads the overrides from the job's configuration (and the cluster's)
        graph.getJobConfiguration().set(PipelineOptions.PARALLELISM_OVERRIDES, overrides);
        if (o.savepoint != null) {
            graph.setSavepointRestoreSettings(SavepointRestoreSettings.forPath(o.savepoint, o.allowNonRestoredState));
        }
        Path jarPath = new Path(o.jar.getAbsoluteFile().toURI());
        if (!graph.getUserJars().contains(jarPath)) {
            graph.addJar(jarPath);
        }
        try (RestClusterClient<StandaloneClusterId> client =
                new RestClusterClient<>(conf, StandaloneClusterId.getInstance())) {
            JobID id = client.submitJob(graph).get(o.timeoutS, TimeUnit.SECONDS);
            return id.toHexString();
        }
    }

    /** Every override names a vertex of the compiled graph and stays within that vertex's max parallelism where the
     * job sets one: a wrong plan is refused here, before Flink restores anything. */
    static void checkOverrides(JobGraph graph, Map<String, Integer> overrides) {
        Map<String, JobVertex> byId = new LinkedHashMap<>();
        for (JobVertex v : graph.getVertices()) {
            byId.put(v.getID().toHexString(), v);
        }
        for (Map.Entry<String, Integer> e : overrides.entrySet()) {
            JobVertex v = byId.get(e.getKey());
            if (v == null) {
                List<String> known = new ArrayList<>();
                byId.forEach((id, vertex) -> known.add(id + " " + vertex.getName()));
                throw new IllegalArgumentException("no job vertex " + e.getKey() + " in the compiled job graph (its vertices: "
                        + String.join(", ", known) + ")");
            }
            int max = v.getMaxParallelism();
            if (max > 0 && e.getValue() > max) {
                throw new IllegalArgumentException("vertex '" + v.getName() + "' (" + e.getKey() + "): parallelism "
                        + e.getValue() + " is above its max parallelism " + max);
            }
        }
    }

    static String oneLine(Throwable e) {
        Throwable root = e;
        StringBuilder text = new StringBuilder();
        while (root != null) {
            String m = root.getMessage();
            if (m != null && !m.isBlank() && text.indexOf(m.strip()) < 0) {
                if (text.length() > 0) {
                    text.append(": ");
                }
                text.append(m.strip());
            }
            if (root.getCause() == root) {
                break;
            }
            root = root.getCause();
        }
        String s = text.length() > 0 ? text.toString() : e.getClass().getName();
        s = s.replaceAll("\\s*\\R\\s*", " ");
        return s.length() > 600 ? s.substring(0, 600) + "…" : s;
    }
}
