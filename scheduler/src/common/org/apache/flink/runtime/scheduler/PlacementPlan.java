package org.apache.flink.runtime.scheduler;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessSpec;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessUtils;
import org.apache.flink.runtime.clusterframework.types.ResourceProfile;
import org.apache.flink.runtime.executiongraph.ExecutionGraph;
import org.apache.flink.runtime.resourcemanager.WorkerResourceSpec;
import org.apache.flink.runtime.resourcemanager.slotmanager.SlotManagerUtils;
import org.apache.flink.runtime.scheduler.strategy.ExecutionVertexID;
import org.apache.flink.runtime.scheduler.strategy.SchedulingExecutionVertex;

import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * A placed job: the TaskManager of each of its subtasks and the slot each TaskManager offers, read from the job's
 * schedulercfg and the TaskManager table beside it ({@value PlacementNames#TASKMANAGERS_FILE}).
 */
final class PlacementPlan {
    final Path file;
    final String jobName;
    final Map<ExecutionVertexID, String> taskManagerOf;
    final Map<String, ResourceProfile> slotOf; // one slot of each TaskManager used, without the external resource
    final Map<String, Integer> slotsOf; // from the table; absent when the slot size came from the cluster config
    final Map<String, String> whereOf; // TaskManager -> the first line placing something there

    private PlacementPlan(Path file, String jobName, Map<ExecutionVertexID, String> taskManagerOf,
            Map<String, ResourceProfile> slotOf, Map<String, Integer> slotsOf, Map<String, String> whereOf) {
        this.file = file;
        this.jobName = jobName;
        this.taskManagerOf = taskManagerOf;
        this.slotOf = slotOf;
        this.slotsOf = slotsOf;
        this.whereOf = whereOf;
    }

    /** The scheduler a slot-allocation context belongs to (Flink internals: the context is its inner class). */
    static SchedulerBase schedulerOf(ExecutionSlotAllocationContext context) {
        for (Class<?> c = context.getClass(); c != null; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (SchedulerBase.class.isAssignableFrom(f.getType())) {
                    try {
                        f.setAccessible(true);
                        return (SchedulerBase) f.get(context);
                    } catch (ReflectiveOperationException | RuntimeException e) {
                        throw new PlacementSchedulerException("cannot reach the scheduler from "
                                + context.getClass().getName() + " (" + e + "); Flink internals differ from those this"
                                + " extension was built against (" + PlacementSchedulerBuild.get().describe() + ")", e);
                    }
                }
            }
        }
        throw new PlacementSchedulerException("the slot allocation context " + context.getClass().getName()
                + " belongs to no scheduler this extension knows (only the default scheduler is supported: set"
                + " jobmanager.scheduler: default)");
    }

    /** What the log says about the job, whether placed or not. */
    static String describeUnplaced(Optional<Path> file) {
        return file.map(f -> "no schedulercfg at " + f + ": stock placement")
                .orElse("placement.scheduler.dir is not set: stock placement");
    }

    /** The job's plan, or empty when the job has no schedulercfg (it runs as stock Flink). */
    static Optional<PlacementPlan> load(SchedulerBase scheduler, ExecutionSlotAllocationContext context,
            StringBuilder logLine) {
        ExecutionGraph graph = scheduler.getExecutionGraph();
        String jobName = graph.getJobName();
        Optional<Path> file = PlacementSchedulerSettings.schedulercfgFor(jobName, graph.getJobConfiguration());
        if (!file.isPresent() || !Files.exists(file.get())) {
            logLine.append(describeUnplaced(file));
            return Optional.empty();
        }
        List<PlacementFiles.Line> lines = PlacementFiles.readSchedulercfg(file.get());
        Path tableFile = file.get().toAbsolutePath().getParent().resolve(PlacementNames.TASKMANAGERS_FILE);
        Map<String, PlacementFiles.TaskManager> table = PlacementFiles.readTaskManagers(tableFile);

        List<PlacementAssignment.Subtask> subtasks = new ArrayList<>();
        for (SchedulingExecutionVertex v : context.getSchedulingTopology().getVertices()) {
            ExecutionVertexID id = v.getId();
            subtasks.add(new PlacementAssignment.Subtask(id, id.getJobVertexId().toHexString(),
                    scheduler.getExecutionVertex(id).getTaskNameWithSubtaskIndex()));
        }
        Map<ExecutionVertexID, PlacementFiles.Line> lineOf = PlacementAssignment.assign(jobName, subtasks, lines);

        Map<ExecutionVertexID, String> tmOf = new LinkedHashMap<>();
        Map<String, ResourceProfile> slotOf = new LinkedHashMap<>();
        Map<String, Integer> slotsOf = new LinkedHashMap<>();
        Map<String, String> whereOf = new LinkedHashMap<>();
        for (Map.Entry<ExecutionVertexID, PlacementFiles.Line> e : lineOf.entrySet()) {
            PlacementFiles.Line line = e.getValue();
            String tm = resolve(line, table, tableFile);
            tmOf.put(e.getKey(), tm);
            if (!slotOf.containsKey(tm)) {
                whereOf.put(tm, line.where());
                if (table != null) {
                    slotOf.put(tm, table.get(tm).slotProfile);
                    slotsOf.put(tm, table.get(tm).slots);
                } else {
                    slotOf.put(tm, slotFromClusterConfig(tm, line, tableFile));
                }
            }
        }
        PlacementPlan plan = new PlacementPlan(file.get(), jobName, tmOf, slotOf, slotsOf, whereOf);
        logLine.append("placed by ").append(file.get()).append(table == null ? " (slot size from the JobManager's"
                + " config: no " + tableFile + ")" : " with " + tableFile);
        return Optional.of(plan);
    }

    /** The TaskManager resource id a line names: an id of the table, or an address of exactly one of its entries. */
    private static String resolve(PlacementFiles.Line line, Map<String, PlacementFiles.TaskManager> table, Path tableFile) {
        String name = line.taskManager;
        if (table == null || table.containsKey(name)) {
            return name;
        }
        List<String> hits = table.values().stream().filter(t -> t.addresses.contains(name)).map(t -> t.id)
                .collect(Collectors.toList());
        if (hits.size() == 1) {
            return hits.get(0);
        }
        if (hits.size() > 1) {
            throw new PlacementSchedulerException(line.where() + ": '" + name + "' is an address of several TaskManagers"
                    + " (" + String.join(", ", hits) + " in " + tableFile + "): name one by its resource id");
        }
        throw new PlacementSchedulerException(line.where() + ": TaskManager '" + name + "' is not registered with"
                + " this cluster (" + tableFile + " lists " + table.values().stream().map(t -> t.addresses.isEmpty()
                ? t.id : t.id + " " + t.addresses).collect(Collectors.joining(", ")) + "): start it, or plan again");
    }

    /** Without a table: one slot of a TaskManager configured like the JobManager (a homogeneous cluster). */
    private static ResourceProfile slotFromClusterConfig(String tm, PlacementFiles.Line line, Path tableFile) {
        Configuration config = PlacementSchedulerSettings.clusterConfiguration();
        try {
            TaskExecutorProcessSpec spec = TaskExecutorProcessUtils.processSpecFromConfig(config);
            ResourceProfile slot = SlotManagerUtils.generateDefaultSlotResourceProfile(
                    WorkerResourceSpec.fromTaskExecutorProcessSpec(spec), spec.getNumSlots());
            return PlacementFiles.withoutExtendedResources(slot);
        } catch (RuntimeException e) {
            throw new PlacementSchedulerException(line.where() + ": no slot size for TaskManager '" + tm + "': "
                    + tableFile + " does not exist (placement apply writes it; `placement scheduler taskmanagers`"
                    + " prints it) and the JobManager's config does not size a TaskManager (" + e.getMessage() + ")");
        }
    }
}
