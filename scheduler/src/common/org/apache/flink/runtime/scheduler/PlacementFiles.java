package org.apache.flink.runtime.scheduler;

import org.apache.flink.api.common.resources.ExternalResource;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.runtime.clusterframework.types.ResourceProfile;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Reading the two files: a job's schedulercfg and the TaskManager table beside it. Errors name file and line. */
final class PlacementFiles {
    private PlacementFiles() {}

    /** One line of a schedulercfg: {@code <label>; <TaskManager>}; the label {@code *} is the default line. */
    static final class Line {
        final Path file;
        final int number;
        final String label;
        final String taskManager;

        Line(Path file, int number, String label, String taskManager) {
            this.file = file;
            this.number = number;
            this.label = label;
            this.taskManager = taskManager;
        }

        boolean isDefault() {
            return label.equals("*");
        }

        String where() {
            return file + ":" + number;
        }
    }

    /** One TaskManager of the table: its resource id, the addresses that also name it, its slots and slot size. */
    static final class TaskManager {
        final String id;
        final List<String> addresses;
        final int slots;
        final ResourceProfile slotProfile; // without the external resource
        final String where;

        TaskManager(String id, List<String> addresses, int slots, ResourceProfile slotProfile, String where) {
            this.id = id;
            this.addresses = addresses;
            this.slots = slots;
            this.slotProfile = slotProfile;
            this.where = where;
        }
    }

    private static List<String> readLines(Path file) {
        try {
            return Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new PlacementSchedulerException(file + ": cannot read (" + e.getClass().getSimpleName() + ": "
                    + e.getMessage() + ")");
        }
    }

    private static boolean skip(String line) {
        String t = line.trim();
        return t.isEmpty() || t.startsWith("#");
    }

    /** The lines of a schedulercfg: {@code <task name> (<i>/<n>); <TaskManager>}, blank lines and #-comments aside. */
    static List<Line> readSchedulercfg(Path file) {
        List<Line> out = new ArrayList<>();
        List<String> lines = readLines(file);
        for (int n = 0; n < lines.size(); n++) {
            String raw = lines.get(n);
            if (skip(raw)) {
                continue;
            }
            int cut = raw.lastIndexOf(';');
            String label = cut < 0 ? "" : raw.substring(0, cut).trim();
            String tm = cut < 0 ? "" : raw.substring(cut + 1).trim();
            if (label.isEmpty() || tm.isEmpty() || tm.contains(" ")) {
                throw new PlacementSchedulerException(file + ":" + (n + 1) + ": expected '<task name> (<i>/<n>); "
                        + "<TaskManager>' or '*; <TaskManager>', got '" + raw.trim() + "'");
            }
            out.add(new Line(file, n + 1, label, tm));
        }
        if (out.isEmpty()) {
            throw new PlacementSchedulerException(file + ": no placement lines (an empty file places nothing; remove it"
                    + " to run the job without placement)");
        }
        return out;
    }

    /** The TaskManager table, or null when there is none. */
    static Map<String, TaskManager> readTaskManagers(Path file) {
        if (!Files.isRegularFile(file)) {
            return null;
        }
        Map<String, TaskManager> out = new LinkedHashMap<>();
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            throw new PlacementSchedulerException(file + ": cannot read (" + e.getMessage() + ")");
        }
        for (int n = 0; n < lines.size(); n++) {
            String raw = lines.get(n);
            if (skip(raw)) {
                continue;
            }
            String where = file + ":" + (n + 1);
            String[] fields = raw.split(";");
            String id = fields[0].trim();
            Map<String, String> kv = new LinkedHashMap<>();
            for (int i = 1; i < fields.length; i++) {
                String[] pair = fields[i].split("=", 2);
                if (pair.length != 2) {
                    throw new PlacementSchedulerException(where + ": expected key=value, got '" + fields[i].trim() + "'");
                }
                kv.put(pair[0].trim(), pair[1].trim());
            }
            if (id.isEmpty() || out.containsKey(id)) {
                throw new PlacementSchedulerException(where + ": " + (id.isEmpty() ? "no TaskManager id" : "TaskManager '"
                        + id + "' listed twice"));
            }
            try {
                int slots = Integer.parseInt(required(kv, "slots", where));
                if (slots < 1) {
                    throw new NumberFormatException("slots must be >= 1");
                }
                ResourceProfile slot = ResourceProfile.newBuilder()
                        .setCpuCores(Double.parseDouble(required(kv, "cpu", where)))
                        .setTaskHeapMemory(MemorySize.parse(required(kv, "task-heap", where)))
                        .setTaskOffHeapMemory(MemorySize.parse(kv.getOrDefault("task-off-heap", "0m")))
                        .setManagedMemory(MemorySize.parse(kv.getOrDefault("managed", "0m")))
                        .setNetworkMemory(MemorySize.parse(kv.getOrDefault("network", "0m")))
                        .build();
                List<String> addresses = new ArrayList<>();
                for (String a : kv.getOrDefault("addresses", "").split(",")) {
                    if (!a.trim().isEmpty()) {
                        addresses.add(a.trim());
                    }
                }
                out.put(id, new TaskManager(id, addresses, slots, slot, where));
            } catch (IllegalArgumentException e) {
                throw new PlacementSchedulerException(where + ": " + e.getMessage());
            }
        }
        return out;
    }

    private static String required(Map<String, String> kv, String key, String where) {
        String v = kv.get(key);
        if (v == null || v.isEmpty()) {
            throw new PlacementSchedulerException(where + ": no " + key + "= (fields: " + Arrays.toString(
                    new String[] {"addresses", "slots", "cpu", "task-heap", "task-off-heap", "managed", "network"}) + ")");
        }
        return v;
    }

    /** A slot profile plus one unit of the TaskManager's own external resource: only that TaskManager can hold it. */
    static ResourceProfile pinned(ResourceProfile slot, String taskManager) {
        return ResourceProfile.newBuilder(slot)
                .setExtendedResource(new ExternalResource(PlacementNames.resourceName(taskManager), 1.0))
                .build();
    }

    static ResourceProfile withoutExtendedResources(ResourceProfile p) {
        return ResourceProfile.newBuilder()
                .setCpuCores(p.getCpuCores())
                .setTaskHeapMemory(p.getTaskHeapMemory())
                .setTaskOffHeapMemory(p.getTaskOffHeapMemory())
                .setManagedMemory(p.getManagedMemory())
                .setNetworkMemory(p.getNetworkMemory())
                .build();
    }
}
