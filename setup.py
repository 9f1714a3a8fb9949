"""ament_python package ``uncertain_bo``; also installs with plain pip (``pip install -e .``)."""
from glob import glob
import os

from setuptools import find_packages, setup

package_name = 'uncertain_bo'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'bench']),
    # shipped data: the papers' benchmark protocols (`uncertain-bo bench --protocol`) with their measured run times,
    # the field suites with their fields (`uncertain-bo bench --suite`), and real survey excerpts (`uncertain-bo map`)
    package_data={'uncertain_bo.benchmarks': ['protocols/*.yaml'],
                  'uncertain_bo.data': ['suites/*.yaml', 'fields/*.npz', 'fields/*.csv', 'surveys/*.csv',
                                        'surveys/README.md']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        (os.path.join('share', package_name, 'launch'), glob('launch/*.launch.py')),
        (os.path.join('share', package_name, 'config'), glob('config/*.yaml') + glob('config/*.rviz')
         + glob('config/*.sdf')),
        (os.path.join('share', package_name, 'config', 'examples'), glob('config/examples/*.yaml')),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='uncertain_bo developers',
    maintainer_email='uncertain-bo@example.org',
    description='Bayesian optimisation under uncertain inputs (uGP-UCB, IGP-UCB, UEI, AIRBO, NES, DRBQO) '
                'with a ROS 2 localisation-aware exploration node.',
    license='Apache-2.0',
    extras_require={'test': ['pytest', 'hypothesis']},
    entry_points={
        'console_scripts': [
            'uncertain-bo = uncertain_bo.cli:main',
            'explorer = uncertain_bo.ros.nodes:explorer',
            'team_explorer = uncertain_bo.ros.nodes:team_explorer',
            'pure_pursuit = uncertain_bo.ros.nodes:pure_pursuit',
            'sim_rover = uncertain_bo.ros.nodes:sim_rover',
            'ekf = uncertain_bo.ros.nodes:ekf',
            'particle_filter = uncertain_bo.ros.nodes:particle_filter',
            'field_sensor = uncertain_bo.ros.nodes:field_sensor',
            'sensor_covariance = uncertain_bo.ros.nodes:sensor_covariance',
        ],
    },
)
