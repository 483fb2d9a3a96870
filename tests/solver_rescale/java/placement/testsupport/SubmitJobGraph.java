package placement.testsupport;

import java.io.File;
import java.util.Arrays;

import org.apache.flink.api.common.JobID;
import org.apache.flink.client.deployment.StandaloneClusterId;
import org.apache.flink.client.program.PackagedProgram;
import org.apache.flink.client.program.PackagedProgramUtils;
import org.apache.flink.client.program.rest.RestClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;

/**
 * Test helper: compile an unmodified job jar into a JobGraph on the client (as Flink 1.x's CLI did) with
 * pipeline.jobvertex-parallelism-overrides in its configuration, and submit that JobGraph over REST.
 *
 * <p>Flink 2.3 applies the overrides in the Dispatcher only to a submitted JobGraph; a REST jar run submits a
 * StreamGraph, so the same option passed there is ignored (see tests/solver_rescale).
 *
 * <p>Arguments: REST host, REST port, jar, entry class, overrides ("vertexId:p,..."), savepoint path or "-", then
 * the job's own arguments. Prints "JOBID id".
 */
public final class SubmitJobGraph {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        conf.set(RestOptions.ADDRESS, args[0]);
        conf.set(RestOptions.PORT, Integer.parseInt(args[1]));
        conf.setString(PipelineOptions.PARALLELISM_OVERRIDES.key(), args[4]);
        File jar = new File(args[2]);
        PackagedProgram program = PackagedProgram.newBuilder()
                .setJarFile(jar)
                .setEntryPointClassName(args[3])
                .setArguments(Arrays.copyOfRange(args, 6, args.length))
                .setConfiguration(conf)
                .build();
        JobGraph graph = PackagedProgramUtils.createJobGraph(program, conf, 1, false);
        if (!args[5].equals("-")) {
            graph.setSavepointRestoreSettings(SavepointRestoreSettings.forPath(args[5], false));
        }
        graph.addJar(new org.apache.flink.core.fs.Path(jar.toURI()));
        try (RestClusterClient<StandaloneClusterId> client =
                new RestClusterClient<>(conf, StandaloneClusterId.getInstance())) {
            JobID id = client.submitJob(graph).get();
            System.out.println("JOBID " + id);
        }
        System.exit(0);
    }
}
